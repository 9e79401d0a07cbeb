"""iolab.nbexec: a notebook executed with nbclient never waits forever for a cell's reply.

`jupyter nbconvert --execute` of the instructor notebook hung in its `interact` cell (1 run in 4 here,
kernel idle): the cell's execute_reply had arrived, but nbclient's mimic of the Output widget sent a
comm message on the shell socket (through jupyter_client's blocking shadow of it) while nbclient's
asyncio poll waited for the reply, and the send took in the wake-up that poll was waiting for."""
from __future__ import annotations

import asyncio
import json
import select
import time

import pytest

zmq = pytest.importorskip("zmq")
pytest.importorskip("jupyter_client")
from jupyter_client.channels import AsyncZMQSocketChannel  # noqa: E402
from jupyter_client.session import Session  # noqa: E402

from iolab import nbexec  # noqa: E402


async def _reply_after_a_send(channel_class, where) -> dict | None:
    """A kernel's shell (a ROUTER) and a client's channel over ipc: while the client waits for a reply
    with no timeout, the reply arrives and the client sends on the same socket (as nbclient's Output
    widget does) before its event loop runs again. The reply, or None when the wait never ended."""
    session = Session(key=b"test")
    addr = f"ipc://{where}/shell"
    kernel = zmq.Context().socket(zmq.ROUTER)
    ctx = zmq.asyncio.Context()
    dealer = ctx.socket(zmq.DEALER)
    try:
        kernel.bind(addr)
        dealer.connect(addr)
        channel = channel_class(dealer, session)
        channel.send(session.msg("kernel_info_request"))
        assert kernel.poll(30_000), "the kernel side got no request"
        ident, _ = session.feed_identities(kernel.recv_multipart())
        session.send(kernel, "kernel_info_reply", {}, ident=ident)
        first = await asyncio.wait_for(channel.get_msg(timeout=None), 30)
        assert first["msg_type"] == "kernel_info_reply"

        waiting = asyncio.ensure_future(channel.get_msg(timeout=None))       # nbclient's wait for the reply
        for _ in range(3):
            await asyncio.sleep(0)                                            # its poll is registered
        session.send(kernel, "execute_reply", {"status": "ok"}, ident=ident)
        fd = zmq.Socket.shadow(dealer.underlying).get(zmq.FD)
        assert select.select([fd], [], [], 30)[0], "the reply's wake-up never came"
        # the Output widget's comm message, sent until the send has taken in the wake-up (libzmq takes
        # in pending commands on a send at most once a millisecond or so)
        for _ in range(200):
            channel.send(session.msg("comm_msg", {"comm_id": "x", "data": {}}))
            if not select.select([fd], [], [], 0)[0]:
                break
            time.sleep(0.005)
        else:
            pytest.fail("no send took in the wake-up")
        try:
            reply = await asyncio.wait_for(waiting, 10)   # the reply is in the socket: 10 s means never
        except asyncio.TimeoutError:
            return None
        return reply
    finally:
        dealer.close(linger=0)
        kernel.close(linger=0)
        ctx.term()


def test_a_send_does_not_hide_the_reply_a_poll_waits_for(tmp_path):
    reply = asyncio.run(_reply_after_a_send(nbexec.Channel, tmp_path))
    assert reply is not None, "the execute_reply sat unread in the socket: nbclient would wait forever"
    assert reply["msg_type"] == "execute_reply"


def test_jupyter_clients_own_channel_still_loses_it(tmp_path):
    """Why nbexec.Channel exists. When this fails, jupyter_client or pyzmq fixed it: drop the workaround."""
    assert asyncio.run(_reply_after_a_send(AsyncZMQSocketChannel, tmp_path)) is None


def _cell(source):
    import nbformat
    return nbformat.v4.new_code_cell(source)


@pytest.mark.slow
def test_an_interact_cell_runs_with_the_client_and_a_hang_fails_with_a_cell_timeout(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook(cells=[
        _cell("import ipywidgets as w\nw.interact(lambda x: print(x), x=w.Dropdown(options=['a', 'b']));"),
        _cell("import threading\nthreading.Event().wait()"),                  # a cell that never ends
        _cell("print('not reached')")])
    client = nbexec.client(nb, tmp_path, timeout=5)
    seen = []
    client.on_cell_start = lambda cell, cell_index: seen.append(
        (type(client.kc), type(client.kc.shell_channel), type(client.kc.control_channel)))
    with pytest.raises(nbclient.exceptions.CellTimeoutError, match="threading.Event"):
        client.execute()
    assert seen and all(s == (nbexec.KernelClient, nbexec.Channel, nbexec.Channel) for s in seen)
    assert any(o.get("output_type") == "display_data" for o in nb.cells[0].outputs)   # the interact's box
    assert not nb.cells[2].outputs


def test_nbconvert_of_an_environment_uses_the_client_and_a_cell_timeout(tmp_path, monkeypatch):
    pytest.importorskip("nbconvert")
    from nbconvert.nbconvertapp import NbConvertApp
    from nbconvert.preprocessors import ExecutePreprocessor

    conf = tmp_path / "etc" / "jupyter" / "jupyter_nbconvert_config.json"
    conf.parent.mkdir(parents=True)
    conf.write_text(json.dumps({"HTMLExporter": {"theme": "dark"}, "ExecutePreprocessor": {"timeout": 7}}))
    assert nbexec.install(tmp_path) == conf
    assert nbexec.main(["install", "--prefix", str(tmp_path)]) == 0           # twice: the same file
    written = json.loads(conf.read_text())
    assert written["HTMLExporter"] == {"theme": "dark"}                     # what was there stays
    assert written["ExecutePreprocessor"]["timeout"] == nbexec.CELL_TIMEOUT
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(conf.parent))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "nothing"))
    app = NbConvertApp()
    app.initialize(["--to", "notebook", "--execute", str(tmp_path / "x.ipynb")])
    ep = ExecutePreprocessor(config=app.config, kernel_name="python3")
    assert ep.timeout == nbexec.CELL_TIMEOUT
    assert ep.create_kernel_manager().client_factory is nbexec.KernelClient


def test_nothing_runs_a_notebook_with_a_bare_nbclient():
    root = nbexec.Path(nbexec.__file__).resolve().parent.parent
    bare = [str(p.relative_to(root)) for folder in ("iolab", "tests", "recorders", "benchmarks")
            for p in (root / folder).rglob("*.py")
            if "NotebookClient(" in p.read_text() and p.name not in ("nbexec.py", "test_nbexec.py")]
    assert not bare, f"run notebooks with iolab.nbexec.execute/client: {bare}"


def test_every_pytest_run_and_every_notebook_cell_has_a_timeout():
    """A hang in CI fails with pytest-timeout's or nbval's error instead of blocking the run forever."""
    tomllib = pytest.importorskip("tomllib")

    root = nbexec.Path(nbexec.__file__).resolve().parent.parent
    ini = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert int(ini["timeout"]) > 0
    make = (root / "Makefile").read_text()
    assert "--nbval-cell-timeout=" in make.split("PYTEST_NB :=")[1].splitlines()[0]
