"""The course as a static site (iolab/site.py, `make site`): built from the recordings, every page in a
real browser (Debian's Chromium, driven by Playwright) draws every chart of its notebook with no
request leaving the machine, its links resolve, and each lesson says where its recordings come from.

The site is built once for the module, from the executions cached in build/site-cache (the ones
`make site` makes; on a fresh checkout this executes every lesson once, in replay mode). Screenshots of
each lesson's charts go to $IOLAB_SITE_SHOTS when it is set, else to the test's tmp dir.
"""
from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from iolab import nbtools, rendering, site

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LOAD = max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
WAIT_MS = int(60_000 * LOAD)



# --- what the build does to a notebook's outputs (no build needed) ------------------------------------

def _chart_html() -> str:
    import plotly.graph_objects as go

    rendering.setup()
    return rendering.static_html(go.Figure(go.Bar(x=[1, 2], y=[3, 4])))


def test_plotly_mathjax_cdn_tag_is_removed_and_nothing_else():
    html = _chart_html()
    assert "cdnjs.cloudflare.com/ajax/libs/mathjax" in html, "plotly no longer adds its MathJax tag: drop the fix"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("fig", outputs=[
        nbformat.v4.new_output("display_data", data={"text/html": html, "text/plain": "Figure"})])])
    assert nbtools.offline_outputs(nb) == 1
    out = nb.cells[0].outputs[0].data["text/html"]
    assert "https://" not in out.split('"responsive"')[0].split("Plotly.newPlot")[0]
    assert out.count(site.PLOTLY_DIV) == 1 and "Plotly.newPlot" in out
    assert html.replace(nbtools.MATHJAX_CDN.search(html).group(0), "") == out
    assert nbtools.offline_outputs(nb) == 0


def test_figures_counted_and_plotlyjs_dropped_once():
    import plotly.offline

    bundle = ("<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>\n"
              f"<script type=\"text/javascript\">{plotly.offline.get_plotlyjs()[:5000]}</script>")
    chart = _chart_html()
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("a", outputs=[nbformat.v4.new_output("display_data", data={"text/html": bundle}),
                                                nbformat.v4.new_output("display_data", data={"text/html": chart})]),
        nbformat.v4.new_code_cell("b", outputs=[nbformat.v4.new_output("stream", name="stdout", text="plotly.js v9")]),
        nbformat.v4.new_code_cell("c", outputs=[nbformat.v4.new_output("execute_result", data={"text/html": chart},
                                                                       execution_count=3)])])
    assert site.figures(nb) == 2
    assert site.drop_plotlyjs(nb) == 1
    assert [len(c.outputs) for c in nb.cells] == [1, 1, 1]
    assert site.figures(nb) == 2 and site.drop_plotlyjs(nb) == 0


def test_replays_are_read_from_the_printed_provenance():
    lines = ("REPLAY of data/recorded/strace/count-read-4k.txt (recorded 2026-11-20, on 2-core VM); IOLAB_MODE=replay\n"
             "some other line\nREPLAY of data/recorded/dd/dd-1m.txt (recorded 2026-11-21, on x)\n"
             "LIVE run here (host, 2026-12-01 10:00 UTC, 0.1 s): python3 -c\n"
             "REPLAY of data/recorded/strace/count-read-4k.txt (recorded 2026-11-20, on 2-core VM)\n")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text=lines)])])
    assert site.replays(nb) == (["data/recorded/strace/count-read-4k.txt", "data/recorded/dd/dd-1m.txt"], 1)
    note = site.provenance_cell(nb, [r for r in site.replays(nb)[0] if (ROOT / r).exists()], 1)
    assert "make lab" in note and "JupyterHub" in note and "ran live" in note


def test_the_build_machines_tool_table_says_whose_it_is():
    out = nbformat.v4.new_output("stream", name="stdout", text="[ OK ]  strace  6.1\n")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import iolab\nfrom iolab import doctor\ndoctor.summary()", outputs=[out]),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("iolab.doctor.summary(skip=('filesystems',))  # later", outputs=[out]),
        nbformat.v4.new_code_cell("# doctor.summary() would list them", outputs=[out]),
        nbformat.v4.new_code_cell("doctor.summary()")])                       # not run: nothing to say
    nb.metadata["iolab"] = {"executed": {"host": "2-core x86_64 host"}}
    assert site.note_doctor(nb) == 2
    kinds = [(c.cell_type, "2-core x86_64 host" in c.source) for c in nb.cells]
    assert kinds == [("code", False), ("markdown", True), ("code", False), ("code", False), ("markdown", True),
                     ("code", False), ("code", False)]


def test_the_table_of_contents_is_the_files():
    parts = site.pages()
    lessons = [p.source.name for p in parts["Lessons"]]
    assert lessons == sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
    assert [p.source.name for p in parts["Exercises"]] == sorted(p.name for p in (ROOT / "exercises").glob("[0-9][0-9]-*.ipynb"))
    assert {p.source.name for p in parts["For instructors"]} >= {"class-results.ipynb", "jupyterhub.md"}
    toc = site.toc(parts, site.api_modules())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    assert files[:len(lessons)] == [f"notebooks/{n.removesuffix('.ipynb')}" for n in lessons]
    assert "iolab.tools.ior" in site.api_modules() and "iolab.tools._darshan_reader" not in site.api_modules()


def test_a_cached_execution_is_reused_until_the_notebook_changes(tmp_path, monkeypatch):
    nbdir = tmp_path / "nb"
    nbdir.mkdir()
    nb_path = nbdir / "t.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")]), nb_path)
    calls = []
    monkeypatch.setattr(nbtools.nbexec, "execute", lambda nb, cwd, **kw: calls.append(kw.get("env")) or
                        nb.cells[0].outputs.append(nbformat.v4.new_output("stream", name="stdout", text="42\n")))
    cache = tmp_path / "cache"
    first = nbtools.executed(nb_path, cache=cache, env={"IOLAB_MODE": "replay"})
    again = nbtools.executed(nb_path, cache=cache)
    assert len(calls) == 1 and calls[0] == {"IOLAB_MODE": "replay"}
    assert again.cells[0].outputs[0].text == first.cells[0].outputs[0].text == "42\n"
    assert again.metadata.iolab.executed["date"]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 8)")]), nb_path)
    nbtools.executed(nb_path, cache=cache)
    assert len(calls) == 2
    assert len(list(cache.glob("t-*.ipynb"))) == 1, "the older execution of the notebook stays behind"


# --- the site, built -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The site built from the recordings: (its directory, its pages by part, figures per docname)."""
    if not (Path(sys.executable).parent / "jupyter-book").exists():
        pytest.skip("jupyter-book is not installed (make site installs the [site] extra)")
    tmp = tmp_path_factory.mktemp("site")
    parts = site.build(tmp / "site", tmp / "work", site.CACHE, log=lambda *a, **k: None)
    return tmp / "site", parts, json.loads((tmp / "site" / "figures.json").read_text())


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs: list[tuple[str, str]] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ("id", "name"):
            if a.get(k):
                self.ids.add(a[k])
        for k in ("href", "src"):
            if a.get(k):
                self.refs.append((tag, a[k]))


@functools.cache
def _parsed(path: Path) -> _Refs:
    p = _Refs()
    p.feed(path.read_text(errors="replace"))
    return p


@pytest.mark.slow
def test_every_page_is_there(built):
    out, parts, figures = built
    for ps in parts.values():
        for page in ps:
            assert (out / f"{page.docname}.html").exists(), page.docname
    for m in site.api_modules():
        html = (out / "api" / f"{m}.html").read_text()
        assert 'class="sig-name descname"' in html or m == "iolab.tools", f"{m}: no documented member"
    assert (out / "api" / "iolab.tools.ior.html").read_text().count('class="sig-name descname"') >= 3
    lessons = {p.docname for p in parts["Lessons"]}
    assert set(figures) >= lessons and all(figures[d] > 0 for d in lessons), figures
    assert len(list(out.rglob("plotly.min.js"))) == 1
    assert not [f for f in out.rglob("*.html") if "plotly.js v" in f.read_text()[:10_000_000]], "plotly.js embedded in a page"
    assert not list(out.rglob("_sources")), "html_copy_source is back on: the notebooks' JSON is copied too"
    assert not [f for f in out.rglob("*.html") if "thebe" in f.read_text()], "sphinx-thebe's tags are back"
    assert site.network_references(out) == []


@pytest.mark.slow
def test_each_lesson_says_where_its_recordings_were_made(built):
    out, parts, _ = built
    for page in parts["Lessons"]:
        html = (out / f"{page.docname}.html").read_text()
        text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))
        assert "make lab" in text and "JupyterHub" in text, page.docname
        if page.replays:
            assert site.TITLE_REPLAYS in text and f"The {len(page.replays)} recording" in text, page.docname
        else:
            assert site.TITLE_BUILT_HERE in text and "replays no recording" in text, page.docname
        if page.live:
            assert f"{page.live} step" in text and "ran live on the machine that built the page" in text
        for rec in page.replays:
            assert (ROOT / rec).exists() and (ROOT / rec).with_suffix(".meta.json").exists(), rec
            assert rec.removeprefix("data/recorded/") in html
        assert "does not name" not in text, page.docname
    assert sum(bool(p.replays) for p in parts["Lessons"]) >= len(parts["Lessons"]) - 1


@pytest.mark.slow
def test_links_resolve(built):
    out, _, _ = built
    broken = []
    pages = sorted(out.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        if "_static" in page.relative_to(out).parts:         # the theme's templates, not pages
            continue
        for tag, ref in _parsed(page).refs:
            parts = urlsplit(ref)
            if parts.scheme in ("http", "https", "mailto", "data", "javascript"):
                continue
            assert not parts.scheme and not parts.netloc, f"{page}: {ref}"
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists() or out.resolve() not in target.parents:
                broken.append(f"{page.relative_to(out)}: <{tag}> {ref}")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _parsed(target).ids:
                broken.append(f"{page.relative_to(out)}: <{tag}> {ref} (no such anchor)")
    assert broken == []


# every plot of the page: the divs plotly draws into, and what plotly itself says it drew
_PLOTS = """() => [...document.querySelectorAll('div.plotly-graph-div')].map(gd => ({
    drawn: !!gd.querySelector('svg.main-svg') && !!gd._fullLayout,
    traces: (gd._fullData || []).length,
    width: gd.getBoundingClientRect().width,
    marks: gd.querySelectorAll('.trace, .bars path, .point, .js-line, .hm, .table-control-view').length}))"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


@pytest.fixture(scope="module")
def served(built):
    out = built[0]
    handler = functools.partial(_Quiet, directory=str(out))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", built
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_every_chart_draws_in_a_browser_and_nothing_leaves_the_machine(served, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    base, (out, parts, figures) = served
    shots = Path(os.environ.get("IOLAB_SITE_SHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    outside, errors, seen = [], [], {}
    docnames = sorted(str(p.relative_to(out).with_suffix("")) for p in out.rglob("*.html")
                      if "_static" not in p.relative_to(out).parts)
    lessons = {p.docname for p in parts["Lessons"]}

    def route(r):
        url = r.request.url
        if url.startswith((base + "/", "file://", "data:", "blob:")):
            r.continue_()
        else:
            outside.append(url)
            r.abort()

    args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    (tmp_path / "home").mkdir()
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=args,
                                    env={**os.environ, "HOME": str(tmp_path / "home")})
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.route("**/*", route)
            page = context.new_page()
            page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
            for doc in docnames:
                page.goto(f"{base}/{doc}.html", wait_until="load", timeout=WAIT_MS)
                want = figures.get(doc, 0)
                page.wait_for_function(f"() => document.querySelectorAll('div.plotly-graph-div svg.main-svg').length >= {want}",
                                       timeout=WAIT_MS, polling=250)
                plots = page.evaluate(_PLOTS)
                seen[doc] = plots
                if doc in lessons:
                    page.locator(".admonition.note").first.screenshot(path=str(shots / f"{doc.replace('/', '_')}-note.png"))
                if want:
                    page.locator("div.plotly-graph-div").first.scroll_into_view_if_needed()
                    page.screenshot(path=str(shots / f"{doc.replace('/', '_')}.png"))
                    page.locator("div.plotly-graph-div").nth(want - 1).screenshot(
                        path=str(shots / f"{doc.replace('/', '_')}-last.png"))
            # interactive offline: hovering a bar of lesson 00's first chart shows plotly's hover label
            page.goto(f"{base}/notebooks/00-start-here.html", wait_until="load", timeout=WAIT_MS)
            page.wait_for_selector("div.plotly-graph-div svg.main-svg", timeout=WAIT_MS)
            bar = page.locator("div.plotly-graph-div .bars path").first
            bar.scroll_into_view_if_needed()
            box = bar.bounding_box()
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.wait_for_selector("div.plotly-graph-div .hoverlayer .hovertext", timeout=WAIT_MS)
            hover = page.locator("div.plotly-graph-div .hoverlayer .hovertext").first.text_content()
            # and from the files alone (a reader who opens index.html from disk): charts draw there too
            lesson = parts["Lessons"][-1].docname
            page.goto((out / f"{lesson}.html").as_uri(), wait_until="load", timeout=WAIT_MS)
            page.wait_for_function(f"() => document.querySelectorAll('div.plotly-graph-div svg.main-svg').length >= {figures[lesson]}",
                                   timeout=WAIT_MS, polling=250)
        finally:
            browser.close()
    assert outside == [], f"requests that left the machine: {sorted(set(outside))[:10]}"
    assert errors == [], errors
    assert "MiB/s" in hover, hover
    wrong = {d: (figures.get(d, 0), len(ps), sum(x["drawn"] for x in ps)) for d, ps in seen.items()
             if len(ps) != figures.get(d, 0) or not all(x["drawn"] and x["traces"] and x["marks"] and x["width"] > 100
                                                         for x in ps)}
    assert wrong == {}, f"pages whose charts did not all draw (want, divs, drawn): {wrong}"
    assert sum(len(ps) for ps in seen.values()) == sum(figures.values()) > 0
