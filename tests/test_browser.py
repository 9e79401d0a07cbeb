"""A real browser runs lesson 00 in JupyterLab: no cell raises, a plotly chart and a widget render.

JupyterLab is started on loopback with a token, on a copy of the notebooks; Debian's Chromium is
driven headless by Playwright (no browser download). The screenshot stays in the test's tmp dir.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")]


# Under load (a shared CI machine, a second heavy job beside the suite) everything here is slower, by
# about how many runnable tasks share each core: the waits below are for conditions, never fixed sleeps,
# and what bounds them scales with the load. A stall is what fails: no cell finishing for STALL_S.
LOAD = max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
STALL_S = 120 * LOAD
START_MS = int(120_000 * LOAD)

# the notebook's state, from JupyterLab's own model: its code cells, those with an execution count,
# those running or queued ([*]), those with an error output, and the kernel's status
_STATE = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const cells = panel.content.widgets.filter(w => w.model.type === 'code');
    const prompt = c => { const p = c.node.querySelector('.jp-InputPrompt'); return p ? p.textContent : ''; };
    const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
    return {total: cells.length,
            done: cells.filter(c => c.model.executionCount !== null && !prompt(c).includes('*')).length,
            running: cells.filter(c => prompt(c).includes('*')).length,
            errors: cells.flatMap(c => c.model.outputs.toJSON().filter(o => o.output_type === 'error')
                                                            .map(o => o.ename + ': ' + o.evalue)),
            kernel: kernel ? kernel.status : 'none'};
}"""
_KERNEL_READY = """() => {
    const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext && panel.sessionContext.session &&
                   panel.sessionContext.session.kernel;
    return !!kernel && kernel.status === 'idle' && kernel.connectionStatus === 'connected';
}"""


def _run_all(page) -> dict:
    """Run every cell and wait until all have run, or one raised (JupyterLab then stops): fails only
    when no cell finishes for STALL_S. Returns the last state."""
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    last, changed = None, time.monotonic()
    while True:
        state = page.evaluate(_STATE)
        if state["errors"] or (state["total"] and state["done"] == state["total"] and not state["running"]
                               and state["kernel"] == "idle"):
            return state
        progress = (state["done"], state["running"])
        if progress != last:
            last, changed = progress, time.monotonic()
        elif time.monotonic() - changed > STALL_S:
            pytest.fail(f"no cell finished for {STALL_S:.0f} s (load {os.getloadavg()[0]:.1f}): {state}")
        page.wait_for_timeout(1000)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    nbdir = tmp_path / "notebooks"
    shutil.copytree(ROOT / "notebooks", nbdir)
    port, token = _free_port(), secrets.token_hex(16)
    argv = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
            f"--ServerApp.root_dir={nbdir}", f"--IdentityProvider.token={token}",
            "--LabApp.expose_app_in_browser=True", "--ServerApp.disable_check_xsrf=False"]
    if os.geteuid() == 0:
        argv.append("--allow-root")
    log = open(tmp_path / "jupyter.log", "w")
    # a home of its own: JupyterLab, the kernel and npm write their state (runtime files, history, logs)
    # there, not in the home of whoever runs the tests
    (tmp_path / "home").mkdir()
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "jcfg"),
                                 "HOME": str(tmp_path / "home")})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_MS / 1000
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start:\n" + (tmp_path / "jupyter.log").read_text()[-2000:])
        # a request without the token is refused
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"{base}/api/contents", timeout=5)
        yield playwright, base, token, nbdir
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
        log.close()


def test_lesson_00_runs_in_a_real_browser(lab, tmp_path):
    playwright, base, token, nbdir = lab
    args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=args,
                                    env={**os.environ, "HOME": str(tmp_path / "home")})   # its profile and caches
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/lab/tree/00-start-here.ipynb?token={token}&reset")
            page.wait_for_function("window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=START_MS)
            page.wait_for_function(_KERNEL_READY, timeout=START_MS, polling=500)   # its kernel started, connected
            state = _run_all(page)
            assert state["errors"] == [], f"cells raised: {state['errors']}"
            page.wait_for_selector(".js-plotly-plot .main-svg", timeout=START_MS)
            page.wait_for_selector(".jupyter-widgets.widget-slider, .widget-slider", timeout=START_MS)
            page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
            page.wait_for_function("!window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=START_MS)
            page.screenshot(path=str(tmp_path / "lesson00.png"), full_page=True)
            bars = page.locator(".js-plotly-plot .bars path").count()
            page.locator(".widget-slider").first.scroll_into_view_if_needed()
            page.screenshot(path=str(tmp_path / "widget.png"))
            errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
            texts = [errors.nth(i).inner_text() for i in range(errors.count())]
        finally:
            browser.close()
    saved = json.loads((nbdir / "00-start-here.ipynb").read_text())
    raised = [o for c in saved["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert raised == [], f"cells raised: {[(o['ename'], o['evalue']) for o in raised]}"
    assert not [t for t in texts if "Traceback" in t or "Error" in t], texts
    assert (tmp_path / "lesson00.png").stat().st_size > 10_000
    assert bars >= 4, "the repeated-reads charts should draw a bar per read"
