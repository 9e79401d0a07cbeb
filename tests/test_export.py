"""A lesson exported to HTML shows its charts offline: plotly.js is embedded, never fetched from a CDN."""
from __future__ import annotations

import os
import re
import shutil

import nbformat
import pytest

from iolab import nbexec, nbtools

pytest.importorskip("nbclient")
nbconvert = pytest.importorskip("nbconvert")


@pytest.mark.slow
def test_lesson_00_html_export_embeds_plotly(tmp_path):
    src = nbtools.project_root() / "notebooks" / "00-start-here.ipynb"
    work = tmp_path / "00.ipynb"
    shutil.copy(src, work)
    nb = nbformat.read(work, as_version=4)
    nbexec.execute(nb, src.parent)
    html, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    assert "Plotly.newPlot" in html, "no plotly chart in the export"
    # plotly.js itself is inline (its licence banner), and no script is loaded from the internet
    assert re.search(r"plotly\.js v\d+\.\d+\.\d+", html), "plotly.js is not embedded"
    remote = re.findall(r"<script[^>]+src=\"(https?://[^\"]+)\"", html)
    assert not [u for u in remote if "plot" in u], remote

    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed: the export was checked as text only")
    sync_api = pytest.importorskip("playwright.sync_api")
    page_file = tmp_path / "00.html"
    page_file.write_text(html)
    with sync_api.sync_playwright() as p:
        (tmp_path / "home").mkdir()
        browser = p.chromium.launch(executable_path=chromium, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
                                    env={**os.environ, "HOME": str(tmp_path / "home")})   # its profile, caches
        try:
            page = browser.new_page()
            # no network at all: everything the chart needs must be in the file
            page.route("http*://**", lambda route: route.abort())
            page.goto(page_file.as_uri())
            page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
            bars = page.locator(".js-plotly-plot .bars path").count()
        finally:
            browser.close()
    assert bars >= 4, "the repeated-reads chart should draw one bar per read"


# --- charts with controls (issue 22, 6): an export without a kernel still shows them ----------------

def test_a_box_of_controls_carries_its_chart_as_html_beside_the_widget_view():
    """nbconvert's templates show a widget view only with the notebook's widget state and the widget
    libraries from a CDN; otherwise they fall back to the output's text/html, which must be the chart."""
    go = pytest.importorskip("plotly.graph_objects")
    w = pytest.importorskip("ipywidgets")
    from IPython.core.formatters import DisplayFormatter

    from iolab import rendering

    fmt = DisplayFormatter()
    rendering.add_static_figures(fmt)

    def show(n=2):
        return go.Figure(go.Bar(x=["a"], y=[n * 1111]), layout=dict(title="chosen by interact"))

    data, _ = fmt.format(w.interactive(show, n=(1, 5)))          # what ipywidgets.interact displays
    assert "application/vnd.jupyter.widget-view+json" in data     # JupyterLab: the live controls only
    assert "chosen by interact" in data["text/html"] and "2222" in data["text/html"]
    box = w.VBox([w.IntSlider(), w.HBox([go.FigureWidget(layout=dict(title="inside a box"))])])
    assert "inside a box" in fmt.format(box)[0]["text/html"]
    assert "text/html" not in fmt.format(w.VBox([w.IntSlider()]))[0]   # no chart, nothing added


NOTEBOOK_WITH_CONTROLS = [
    "import iolab\niolab.setup()",
    "from iolab.lessons.l04_ior import explorers\nexplorers.ior_sweep_explorer()",
    "import ipywidgets\nimport plotly.graph_objects as go\n"
    "def show(n=3):\n    return go.Figure(go.Bar(x=['a'], y=[n * 1111]), layout=dict(title='chosen by interact'))\n"
    "ipywidgets.interact(show, n=(1, 5));",
]


@pytest.mark.slow
def test_make_html_draws_every_chart_with_controls_offline(tmp_path, monkeypatch):
    """`make html` (nbtools.export_html): the explorer's and the interact's charts are in the file and
    drawn by a browser with no network. nbconvert's own `--execute` keeps the widget state, and the same
    outputs are then empty boxes (their widget views, whose libraries come from a CDN)."""
    monkeypatch.setenv("IOLAB_MODE", "replay")
    src = tmp_path / "controls.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in NOTEBOOK_WITH_CONTROLS])
    nbformat.write(nb, src)
    page_file = nbtools.export_html(src, tmp_path / "html")
    html = page_file.read_text()
    assert 'type="application/vnd.jupyter.widget-view+json"' not in html, "the export chose a widget view"
    assert "chosen by interact" in html and "3333" in html
    assert "bandwidth against transfer size" in html                  # the IOR sweep explorer's figure
    assert html.count("Plotly.newPlot") == 2
    assert len(re.findall(r"plotly\.js v\d+\.\d+\.\d+", html)) == 1, "plotly.js must be embedded once, before them"

    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed: the export was checked as text only")
    sync_api = pytest.importorskip("playwright.sync_api")
    (tmp_path / "home").mkdir()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
                                    env={**os.environ, "HOME": str(tmp_path / "home")})
        try:
            page = browser.new_page()
            page.route("http*://**", lambda route: route.abort())
            page.goto(page_file.as_uri())
            page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2",
                                   timeout=30_000)
            titles = page.locator(".js-plotly-plot .gtitle").all_text_contents()
        finally:
            browser.close()
    assert "chosen by interact" in titles
    assert any("bandwidth against transfer size" in t for t in titles), titles
