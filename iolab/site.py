"""The whole course as one static site that needs no kernel, no install and no network (`make site`).

    python -m iolab.site build [--out DIR] [--cache DIR]     build/site/index.html (defaults below)

Every lesson and the instructor notebook is executed in replay mode (IOLAB_MODE=replay: every
experiment from its recording) by :func:`iolab.nbtools.executed`, the execution behind ``make html``,
and kept in a cache keyed by what it depends on, so a second build executes nothing that did not
change. The pages are then built with jupyter-book 1.x (Sphinx + myst-nb; 2.x downloads its theme
at build time): the lessons, the exercises (the student copies, with their instructions), the
instructor notebook, the instructors' guide (docs/*.md) and an API reference from the docstrings of
the tools and the core modules. The table of contents is derived from the files, never kept by hand.

What makes it work offline (tests/test_site.py checks it in a real browser):
- a control box's widget view (application/vnd.jupyter.widget-view+json) gets no priority, so its
  static chart (iolab.rendering.add_static_figures) is shown: the widget view alone draws nothing
  without the widget libraries and their state;
- plotly.js is one file of the site (_static/plotly.min.js, loaded by every page) instead of a copy
  embedded in each lesson; plotly's MathJax CDN tag is removed (nbtools.offline_outputs);
- math is not rendered (no lesson has any; Sphinx would load MathJax from a CDN for a page that had);
- each lesson page says where and when the recordings it replays were made, what running it live
  would show instead, and how (`make lab`, a JupyterHub).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import nbtools, safeio

ROOT = nbtools.project_root()
OUT = ROOT / "build" / "site"
WORK = ROOT / "build" / "site-src"            # the generated Sphinx source and its incremental build
CACHE = ROOT / "build" / "site-cache" / "replay"
TITLE = "HPC storage I/O: which layer served that number?"

# the tool layer is documented whole (every public module of iolab/tools), the core by this list:
# the modules a lesson and an exercise call (DEVELOPERS.md, "The core API")
CORE_MODULES = ("iolab.units", "iolab.runner", "iolab.recordings", "iolab.workspace", "iolab.explain",
                "iolab.trials", "iolab.check", "iolab.errors")

# lines a replayed or live run prints (recordings.live_or_recorded)
REPLAY_LINE = re.compile(r"^REPLAY of (data/recorded/[^\s(]+) \(")
LIVE_LINE = re.compile(r"^LIVE run here \(")
# the output that embeds plotly.js in a notebook (the notebook renderer's first display)
PLOTLYJS_HEADER = re.compile(r"<script[^>]*>/\*\*\s*\* plotly\.js v")
PLOTLY_DIV = 'class="plotly-graph-div"'
TITLE_REPLAYS = "This page replays recordings"
TITLE_BUILT_HERE = "This page was measured on the machine that built it"
# sphinx-thebe's tags, which jupyter-book adds to every page (twice: a console error) although the site
# runs no code: they would load thebe from a CDN when activated. Taken out of every page.
THEBE_TAGS = re.compile(r'\s*<script>const THEBE_JS_URL = [^<]*</script>|\s*<script async="async" src="[^"]*sphinx-thebe\.js[^"]*"></script>'
                        r'|\s*<link rel="stylesheet" type="text/css" href="[^"]*sphinx-thebe\.css[^"]*" />'
                        r'|\s*<script type="text/x-thebe-config">.*?</script>', re.DOTALL)


@dataclass
class Page:
    """One page of the site: where it comes from, where its source goes, and whether it is executed."""
    source: Path          # in the checkout
    docname: str          # in the site, without suffix ("notebooks/00-start-here")
    execute: bool = False
    lesson: bool = False
    figures: int = 0      # plotly charts in its outputs (what a browser must draw)
    replays: list[str] = field(default_factory=list)
    live: int = 0         # runs it made on the machine that built it (nothing to replay)


def lessons(root: Path = ROOT) -> list[Path]:
    return sorted((root / "notebooks").glob("[0-9][0-9]-*.ipynb"))


def pages(root: Path = ROOT) -> dict[str, list[Page]]:
    """The site's parts and their pages, in order, from the files there are."""
    rel = lambda p: str(p.relative_to(root).with_suffix(""))   # noqa: E731
    return {
        "Lessons": [Page(p, rel(p), execute=True, lesson=True) for p in lessons(root)],
        "Exercises": [Page(p, rel(p)) for p in sorted((root / "exercises").glob("[0-9][0-9]-*.ipynb"))],
        "For instructors": ([Page(p, rel(p), execute=True) for p in sorted((root / "notebooks" / "instructor").glob("*.ipynb"))]
                            + [Page(p, rel(p)) for p in sorted((root / "docs").glob("*.md"))]),
    }


def api_modules(root: Path = ROOT) -> list[str]:
    tools = sorted(f"iolab.tools.{p.stem}" for p in (root / "iolab" / "tools").glob("*.py") if not p.stem.startswith("_"))
    return ["iolab.tools", *[t for t in tools if t != "iolab.tools.__init__"], *CORE_MODULES]


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def figures(nb) -> int:
    """How many plotly charts the notebook's outputs hold (each a ``plotly-graph-div`` in the
    ``text/html`` the page shows)."""
    return sum(_text((o.get("data") or {}).get("text/html")).count(PLOTLY_DIV)
               for c in nb.cells for o in c.get("outputs", []) or [])


def drop_plotlyjs(nb) -> int:
    """Remove the outputs that embed plotly.js (the site loads it once, from _static); returns how many."""
    n = 0
    for cell in nb.cells:
        outs = cell.get("outputs") or []
        keep = [o for o in outs if not PLOTLYJS_HEADER.search(_text((o.get("data") or {}).get("text/html"))[:4000])]
        n += len(outs) - len(keep)
        if len(keep) != len(outs):
            cell["outputs"] = keep
    return n


DOCTOR_CALL = re.compile(r"^\s*(?:iolab\.)?doctor\.(?:summary|table)\(", re.MULTILINE)
DOCTOR_NOTE = ("*Above: the tools and filesystems of the machine that built this page "
               "({host}), not yours. Run live, this cell lists your machine's (`iolab doctor` too).*")


def note_doctor(nb) -> int:
    """After each cell that prints ``iolab.doctor``'s table, a line saying whose machine it describes;
    returns how many."""
    import nbformat

    host = ((nb.metadata.get("iolab") or {}).get(nbtools.EXECUTED) or {}).get("host", "the build machine")
    n = 0
    for i in range(len(nb.cells) - 1, -1, -1):
        cell = nb.cells[i]
        if cell.cell_type == "code" and DOCTOR_CALL.search(_text(cell.source)) and cell.get("outputs"):
            note = nbformat.v4.new_markdown_cell(DOCTOR_NOTE.format(host=host))
            note.id = f"iolab-site-doctor-{i}"
            nb.cells.insert(i + 1, note)
            n += 1
    return n


def replays(nb) -> tuple[list[str], int]:
    """The recordings the executed notebook replayed (in order, once each), and how many runs were live."""
    found: dict[str, None] = {}
    live = 0
    for cell in nb.cells:
        for o in cell.get("outputs", []) or []:
            if o.get("output_type") != "stream":
                continue
            for line in _text(o.get("text")).splitlines():
                m = REPLAY_LINE.match(line.strip())
                if m:
                    found[m.group(1)] = None
                elif LIVE_LINE.match(line.strip()):
                    live += 1
    return list(found), live


def _meta(root: Path, recording: str) -> dict[str, Any]:
    raw = root / recording
    meta = raw.with_suffix(".meta.json")         # <name>.<ext> beside <name>.meta.json (a name may hold dots)
    try:
        m = safeio.read_json(meta, limit=1024 * 1024, what="recording's meta")
    except (OSError, ValueError):
        return {}
    return m if isinstance(m, dict) else {}


def provenance_cell(nb, recs: list[str], live: int, root: Path = ROOT, up: str = "../") -> str:
    """The note a lesson page opens with: how the page was made, where and when its recordings were
    made, what running it live shows instead, and how to run it live."""
    made = (nb.metadata.get("iolab") or {}).get(nbtools.EXECUTED) or {}
    metas = [(r, _meta(root, r)) for r in recs]
    hosts = sorted({(m.get("host") or {}).get("description") or (m.get("host") or {}).get("hostname")
                    or "a machine its recording does not name" for _, m in metas})
    dates = sorted((m.get("date") or "")[:10] for _, m in metas if m.get("date"))
    tools = sorted({m.get("tool") for _, m in metas if m.get("tool")})
    title = (TITLE_REPLAYS if metas else TITLE_BUILT_HERE) + ": run it live to measure your own machine"
    lines = [f":::{{admonition}} {title}", ":class: note", ""]
    built = f"It was executed on {made.get('date', '?')} ({made.get('host', '?')})" if made else "It was executed"
    lines.append(f"{built} with `IOLAB_MODE=replay`: every experiment that runs a tool replays a real recorded "
                 "output through the same parser the live run uses, and each one prints which recording it is.")
    lines.append("")
    if metas:
        span = dates[0] if dates and dates[0] == dates[-1] else (f"{dates[0]} to {dates[-1]}" if dates else "on an unrecorded date")
        lines.append(f"**Where and when:** {len(metas)} recording{'s' if len(metas) != 1 else ''}, made "
                     f"{span} on {'; '.join(hosts)}"
                     + (f", with {', '.join(tools)}." if tools else "."))
    else:
        lines.append("**Where and when:** this page replays no recording; what it shows was computed on the "
                     "machine that built it.")
    if live:
        lines.append(f"{live} step{'s' if live != 1 else ''} ran live on the machine that built the page "
                     "(nothing to replay: their numbers are that machine's).")
    lines += ["",
              "**Live**, each of these cells runs " + (", ".join(tools) if tools else "its experiment")
              + " on your machine instead: the numbers, the charts and every sentence computed from them are "
              "then your machine's (its filesystems, cache and load), and may differ from these; where a tool "
              "is missing there, that cell replays its recording as here and says so.",
              "",
              "**Run it live:** in a checkout of the course, `make lab` sets up what it needs and opens this "
              "lesson in JupyterLab; on a class JupyterHub, open it from the course's folder "
              f"(the [guide for instructors]({up}docs/jupyterhub.md) sets one up).", ":::", ""]
    if metas:
        lines += [f":::{{dropdown}} The {len(metas)} recording{'s' if len(metas) != 1 else ''} this page replays",
                  "", "| recording | recorded | on | filesystem | tool |", "|---|---|---|---|---|"]
        for r, m in metas:
            host = m.get("host") or {}
            fs = (m.get("filesystem") or {}).get("fstype") or ""
            tool = " ".join(x for x in (m.get("tool") or "", m.get("tool_version") or "") if x)
            lines.append(f"| `{r.removeprefix('data/recorded/')}` | {(m.get('date') or '?')[:16].replace('T', ' ')} "
                         f"| {host.get('description') or host.get('hostname') or '?'} | {fs} | {tool} |")
        lines += ["", ":::"]
    return "\n".join(lines)


def _write(path: Path, text: str) -> None:
    """Write only when the text changed, so Sphinx's incremental build rebuilds only what did."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _yaml(value: Any) -> str:
    import yaml                                 # jupyter-book's own dependency

    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True)


def config() -> dict[str, Any]:
    return {
        "title": TITLE,
        "author": "the iolab course",
        "only_build_toc_files": True,
        "execute": {"execute_notebooks": "off"},       # executed by nbtools.executed, in replay mode
        "html": {"use_repository_button": False, "use_issues_button": False, "use_edit_page_button": False,
                 "use_download_button": False, "home_page_in_navbar": True},
        "launch_buttons": {"notebook_interface": "classic", "binderhub_url": "", "jupyterhub_url": "",
                           "thebe": False, "colab_url": ""},
        "parse": {"myst_enable_extensions": ["colon_fence", "deflist", "linkify", "substitution", "tasklist"]},
        "sphinx": {
            "extra_extensions": ["sphinx.ext.autodoc"],
            "config": {
                # the widget view draws nothing offline: never choose it (null drops; -1 would raise it
                # to first place); the plotly JSON neither (its text/html is the chart)
                "nb_mime_priority_overrides": [["html", "application/vnd.jupyter.widget-view+json", None],
                                               ["html", "application/vnd.plotly.v1+json", None]],
                "html_copy_source": False,
                "html_show_sourcelink": False,
                "html_static_path": ["_static"],
                "html_js_files": ["plotly-config.js", "plotly.min.js"],
                "html_css_files": ["iolab.css"],
                "autodoc_member_order": "bysource",
                "autodoc_default_options": {"members": True, "show-inheritance": True},
                "autodoc_typehints": "description",
                "suppress_warnings": ["mystnb.unknown_mime_type", "myst.header"],
                # no download buttons: they link the page's source, which the site does not copy
                "html_theme_options": {"search_bar_text": "Search the course...", "use_download_button": False,
                                       "use_fullscreen_button": True, "home_page_in_toc": True,
                                       "show_navbar_depth": 1},
                "nb_merge_streams": True,
            },
        },
    }


def toc(parts: dict[str, list[Page]], api: Iterable[str]) -> dict[str, Any]:
    api = list(api)
    out: list[dict[str, Any]] = [{"caption": cap, "chapters": [{"file": p.docname} for p in ps]}
                                 for cap, ps in parts.items() if ps]
    out.append({"caption": "Reference", "chapters": [{"file": "api/index",
                                                      "sections": [{"file": f"api/{m}"} for m in api]}]})
    return {"format": "jb-book", "root": "index", "parts": out}


def index_page(parts: dict[str, list[Page]]) -> str:
    lines = [f"# {TITLE}", "",
             "A hands-on course on storage I/O on HPC systems, as a site you read without installing anything. "
             "Its one idea: an I/O number means nothing until you know which layer served it (the page cache, "
             "readahead, the system calls, the benchmark's own options, a FUSE cache, the network, the disk).", "",
             "Every lesson here was executed from **real recordings**: the outputs of real runs of strace, dd, "
             "fio, IOR, mdtest, Darshan and Ceph, each replayed through the same parser a live run uses. Each "
             "lesson page says where and when its recordings were made. To measure your own machine instead, "
             "run the course live: `make lab` in a checkout (Linux), or on a class JupyterHub "
             "([guide for instructors](docs/jupyterhub.md)). The charts are interactive here too (hover, zoom); "
             "the controls that re-run an experiment need a live kernel.", ""]
    for cap, ps in parts.items():
        if ps:
            lines += [f"## {cap}", ""] + [f"- [{_title(p)}]({p.docname}{p.source.suffix})" for p in ps] + [""]
    lines += ["## Reference", "", "- [The API of the tools and the core modules](api/index.md)", ""]
    return "\n".join(lines)


def _title(page: Page) -> str:
    if page.source.suffix == ".md":
        for line in page.source.read_text().splitlines():
            if line.startswith("# "):
                return line[2:].strip()
        return page.source.stem
    nb = json.loads(page.source.read_text())
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            for line in _text(cell.get("source")).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return page.source.stem


def api_pages(modules: list[str]) -> dict[str, str]:
    out = {"api/index.md": "\n".join([
        "# API reference", "",
        "The tools (one module per tool: argv builders, `run()`, `parse(text) -> list[dict]` with the schema "
        "of its records, `to_frame()`) and the core modules the lessons and exercises call, from their "
        "docstrings.", ""] + [f"- [`{m}`]({m}.md)" for m in modules] + [""])}
    for m in modules:
        out[f"api/{m}.md"] = f"# `{m}`\n\n```{{eval-rst}}\n.. automodule:: {m}\n   :members:\n   :show-inheritance:\n```\n"
    return out


def prepare(work: Path = WORK, cache: Path = CACHE, root: Path = ROOT, *, log=print) -> dict[str, list[Page]]:
    """Write the Sphinx source of the site into ``work``: every page (the executed ones from the cache,
    executing what changed), the table of contents, the configuration and plotly.js."""
    import nbformat
    import plotly.offline

    env = {**os.environ, "IOLAB_MODE": "replay"}     # the site shows the recordings: its kernels replay
    parts = pages(root)
    src = work / "src"
    wanted = {"_config.yml", "_toc.yml", "index.md", "_static"}
    for cap, ps in parts.items():
        for page in ps:
            target = src / (page.docname + page.source.suffix)
            wanted.add(str(target.relative_to(src)))
            if page.source.suffix == ".md":
                _write(target, page.source.read_text())
                continue
            if page.execute:
                hit = any(cache.glob(f"{page.source.stem}-{nbtools.execution_key(page.source, root)}.ipynb"))
                log(f"{'cached ' if hit else 'execute'} {page.source.relative_to(root)}", flush=True)
                nb = nbtools.executed(page.source, cache=cache, env=env)
                page.figures = figures(nb)
                drop_plotlyjs(nb)
                page.replays, page.live = replays(nb)
                note_doctor(nb)
                if page.lesson or page.replays:
                    note = nbformat.v4.new_markdown_cell(provenance_cell(
                        nb, page.replays, page.live, root, up="../" * page.docname.count("/")))
                    note.id = "iolab-site-provenance"
                    nb.cells.insert(1, note)
            else:
                nb = nbformat.read(page.source, as_version=4)
            _write(target, nbformat.writes(nb) + "\n")
    modules = api_modules(root)
    for name, text in api_pages(modules).items():
        _write(src / name, text)
        wanted.add(name)
    _write(src / "index.md", index_page(parts))
    _write(src / "_config.yml", _yaml(config()))
    _write(src / "_toc.yml", _yaml(toc(parts, modules)))
    _write(src / "_static" / "plotly.min.js", plotly.offline.get_plotlyjs())
    _write(src / "_static" / "plotly-config.js", "window.PlotlyConfig = {MathJaxConfig: 'local'};\n")
    # a claim is one long line: wrapped, not cut at the page's edge
    _write(src / "_static" / "iolab.css", "div.cell_output pre { white-space: pre-wrap; word-break: break-word; }\n")
    for f in sorted(src.rglob("*"), reverse=True):          # pages that are gone (a renamed lesson)
        rel = str(f.relative_to(src))
        if f.is_file() and rel not in wanted and not rel.startswith(("_static/", "_build/")):
            f.unlink()
    return parts


def jupyter_book() -> str:
    exe = Path(sys.executable).parent / "jupyter-book"
    if not exe.exists():
        raise SystemExit("jupyter-book is not installed here: `make site` installs it "
                         "(pip install -e '.[site]')")
    return str(exe)


def build(out: Path = OUT, work: Path = WORK, cache: Path = CACHE, root: Path = ROOT, *, log=print) -> dict[str, list[Page]]:
    """Build the site into ``out`` (replaced whole); returns its pages (with their figure counts)."""
    parts = prepare(work, cache, root, log=log)
    src = work / "src"
    argv = [jupyter_book(), "build", str(src), "--path-output", str(work), "--builder", "html", "--keep-going"]
    log("jupyter-book build", flush=True)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    (work / "build.log").write_text(done.stdout + done.stderr)
    html = work / "_build" / "html"
    if done.returncode != 0 or not (html / "index.html").exists():
        raise SystemExit(f"jupyter-book build failed ({done.returncode}); its log: {work / 'build.log'}\n"
                         + (done.stdout + done.stderr)[-3000:])
    tmp = out.with_name(out.name + ".new")
    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(html, tmp, ignore=shutil.ignore_patterns(".buildinfo", ".doctrees", "sphinx-thebe.*"))
    for f in tmp.rglob("*.html"):
        text = f.read_text()
        if "thebe" in text:
            f.write_text(THEBE_TAGS.sub("", text))
    leaks = network_references(tmp)
    if leaks:
        raise SystemExit("the site would request these from the network: " + "; ".join(leaks[:10]))
    (tmp / "figures.json").write_text(json.dumps(
        {p.docname: p.figures for ps in parts.values() for p in ps if p.execute}, indent=1) + "\n")
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return parts


# an attribute that makes a browser fetch something when the page loads (not a plain <a href> link)
_FETCHES = re.compile(r"""<(?:script|img|iframe|link|source|video|audio|embed)\b[^>]*?\b(?:src|href)=["'](https?:)?//""",
                      re.IGNORECASE)


def network_references(html_dir: Path) -> list[str]:
    """Every page's tags that would load something from another machine (scripts, styles, images,
    fonts in CSS): the site must have none."""
    found = []
    for f in sorted(html_dir.rglob("*")):
        if f.suffix not in (".html", ".css", ".js") or f.name == "plotly.min.js":
            continue
        text = f.read_text(errors="replace")
        if f.suffix == ".html":
            for m in _FETCHES.finditer(text):
                tag = m.group(0)
                if 'rel="canonical"' in tag or "rel='canonical'" in tag:
                    continue
                found.append(f"{f.relative_to(html_dir)}: {tag[:120]}")
        else:
            for m in re.finditer(r"""(?:url\(\s*["']?|@import\s+["'])(https?:)?//[^"')\s]+""", text):
                found.append(f"{f.relative_to(html_dir)}: {m.group(0)[:120]}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m iolab.site", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build the site (executes in replay mode what changed)")
    b.add_argument("--out", type=Path, default=OUT)
    b.add_argument("--cache", type=Path, default=CACHE)
    b.add_argument("--work", type=Path, default=WORK)
    a = parser.parse_args(sys.argv[1:] if argv is None else argv)
    import time
    start = time.monotonic()
    parts = build(a.out, a.work, a.cache)
    n = sum(len(ps) for ps in parts.values())
    size = sum(f.stat().st_size for f in a.out.rglob("*") if f.is_file())
    warnings = (a.work / "build.log").read_text().count("WARNING:")
    print(f"built {a.out}/index.html: {n} course pages + the API reference, "
          f"{sum(p.figures for ps in parts.values() for p in ps)} charts, {size / 2**20:.1f} MiB, "
          f"{time.monotonic() - start:.0f} s; Sphinx's {warnings} warning{'s' if warnings != 1 else ''} "
          f"in {a.work / 'build.log'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
