"""The first call of every lesson: chart rendering that works in JupyterLab, in CI and offline."""
from __future__ import annotations


def setup() -> None:
    """Make plotly charts render in JupyterLab and in an HTML export, with no internet.

    ``plotly_mimetype`` is what JupyterLab draws; ``notebook`` embeds plotly.js once per notebook
    so an exported HTML file shows the charts offline too.
    """
    import plotly.io as pio

    pio.renderers.default = "plotly_mimetype+notebook"
    pio.templates.default = "plotly_white"
