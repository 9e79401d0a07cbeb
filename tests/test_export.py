"""A lesson exported to HTML shows its charts offline: plotly.js is embedded, never fetched from a CDN."""
from __future__ import annotations

import os
import re
import shutil

import nbformat
import pytest

from iolab import nbtools

nbclient = pytest.importorskip("nbclient")
nbconvert = pytest.importorskip("nbconvert")


@pytest.mark.slow
def test_lesson_00_html_export_embeds_plotly(tmp_path):
    src = nbtools.project_root() / "notebooks" / "00-start-here.ipynb"
    work = tmp_path / "00.ipynb"
    shutil.copy(src, work)
    nb = nbformat.read(work, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(src.parent)}}).execute()
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
