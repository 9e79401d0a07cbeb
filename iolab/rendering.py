"""The first call of every lesson: chart rendering that works in JupyterLab, in CI and offline."""
from __future__ import annotations

WIDGET_BOXES = ("ipywidgets.widgets.widget_box", "Box")     # VBox, HBox, interact's box: every control box


def setup() -> None:
    """Make plotly charts render in JupyterLab and in an HTML export, with no internet.

    ``plotly_mimetype`` is what JupyterLab draws; ``notebook`` embeds plotly.js once per notebook
    so an exported HTML file shows the charts offline too. A box of ipywidgets controls that holds a
    chart (``ipywidgets.interact`` of a function returning a figure, a VBox with a FigureWidget) also
    carries that chart as a static figure, for an HTML export (``add_static_figures``).
    """
    import plotly.io as pio

    pio.renderers.default = "plotly_mimetype+notebook"
    pio.templates.default = "plotly_white"
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        add_static_figures(shell.display_formatter)


def static_html(fig) -> str:
    """The figure as it stands, as the ``text/html`` every plotly chart of a lesson carries (the
    ``notebook`` renderer's). Built the way ``pio.show`` builds a displayed figure's, so plotly.js is
    embedded once in the notebook, before it, even when a control box holds the lesson's first chart
    (``Figure._repr_mimebundle_`` would embed it again at each call, the renderer alone never)."""
    import plotly.graph_objects as go
    import plotly.io as pio

    fig_dict = go.Figure(fig).to_dict()
    try:
        bundle = pio.renderers._build_mime_bundle(fig_dict)   # activates pending renderers: plotly.js, once
    except AttributeError:                                   # a plotly without it: the renderer alone
        bundle = {}
    if "text/html" not in bundle:                            # setup() not called: the notebook renderer's
        bundle = pio.renderers["notebook"].to_mimebundle(fig_dict)
    return bundle["text/html"]


def figure_in(widget):
    """The plotly figure a box of controls shows, or None: an ``interact``'s result when it is a
    figure, else the first FigureWidget among the box's children (depth first)."""
    from plotly.basedatatypes import BaseFigure

    result = getattr(widget, "result", None)          # ipywidgets.interactive: what the function returned
    if isinstance(result, BaseFigure):
        return result
    for child in getattr(widget, "children", ()):
        if isinstance(child, BaseFigure):
            return child
        found = figure_in(child)
        if found is not None:
            return found
    return None


def _box_html(widget) -> str | None:
    fig = figure_in(widget)
    return None if fig is None else static_html(fig)


def add_static_figures(display_formatter) -> None:
    """Give every ipywidgets box that shows a plotly chart a ``text/html`` beside its widget view.

    An HTML export (nbconvert's templates, JupyterLab's File > Save and Export) shows a widget view
    only when the notebook holds the widgets' state, and then only with the widget libraries loaded
    from a CDN: offline, or without that state, the box is empty. The export's filter
    (nbconvert.filters.WidgetsDataTypeFilter) then falls back to the output's next mime type, this
    ``text/html``: the chart as first drawn. JupyterLab with a kernel draws the widget view alone
    (the richest mime type of an output), so the chart is never shown twice."""
    display_formatter.formatters["text/html"].for_type_by_name(*WIDGET_BOXES, _box_html)
