"""What every lesson's ipywidgets controls are: an :class:`Explorer` (a control box around a plotly
FigureWidget that a static export still shows). A lesson's own controls, each re-running a small
measurement and updating its chart, are its ``explorers`` module (``iolab.lessons.<lesson>.explorers``)."""
from __future__ import annotations
from . import rendering


class Explorer:
    """A control box (an ipywidgets VBox holding a FigureWidget) that a static HTML export still shows.

    A notebook exported without widget state drops the widget's view; its display here also carries
    the figure as it stands, as the ``text/html`` the notebook's other plotly figures use, which the
    export falls back to (see ``iolab.rendering.add_static_figures``, which does the same for any box
    of controls once ``iolab.setup()`` ran). In JupyterLab the live widget is shown. Anything else is
    the box's own (``children``, ``layout``...)."""

    def __init__(self, box, fig):
        self.box, self.fig = box, fig

    def static_html(self) -> str:
        return rendering.static_html(self.fig)

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = self.box._repr_mimebundle_(include=include, exclude=exclude)
        data = dict(data[0] if isinstance(data, tuple) else data or {})
        data["text/html"] = self.static_html()
        return data

    def __getattr__(self, name):
        return getattr(self.box, name)
