"""Executing notebooks with nbclient (make html, nbconvert --execute, the tests) without a lost reply.

Why: nbclient waits for a cell's ``execute_reply`` on the shell socket (a pyzmq asyncio socket,
``poll()`` without a timeout unless one is set) while it answers an Output widget's messages (an
``interact``'s) on that same socket. jupyter_client sends through a blocking shadow of the socket
(``Session.send``), and a send lets libzmq take in the socket's pending commands: when the reply has
just arrived, that consumes the edge-triggered ZMQ_FD wake-up, pyzmq's asyncio socket never learns
that a message is waiting, and the reply sits unread while the kernel is idle: ``jupyter nbconvert
--execute`` of the instructor notebook hung forever in its ``interact`` cell, once in a few runs here
(tests/test_nbexec.py makes it happen every time). The client here asks the asyncio socket for its
events after every send (``socket.get(zmq.EVENTS)``, pyzmq's own way to re-arm it), so a waiting
poll wakes; and every execution has a per-cell timeout, so anything else that waits forever fails
with nbclient's CellTimeoutError naming the cell.

    execute(nb, cwd)                          run a notebook node in place (NotebookClient, this client)
    python -m iolab.nbexec install --prefix P write P/etc/jupyter/jupyter_nbconvert_config.json, so that
                                              `jupyter nbconvert --execute` in that environment does the same
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from traitlets import Type

#: seconds a cell may run before nbclient stops with CellTimeoutError (a lesson runs in < 60 s in all)
CELL_TIMEOUT = 300
#: the kernel client, by the name traitlets configuration takes
CLIENT = "iolab.nbexec.KernelClient"


class Channel(AsyncZMQSocketChannel):
    """A request channel (shell, control, stdin) whose sends never hide a reply from a waiting poll."""

    def send(self, msg: dict[str, Any]) -> None:
        super().send(msg)
        # The blocking shadow send may have taken in the command that announced a waiting message;
        # reading EVENTS through the asyncio socket schedules its handler when one is waiting.
        self.socket.get(zmq.EVENTS)


class KernelClient(AsyncKernelClient):
    """jupyter_client's asyncio kernel client with :class:`Channel` for every channel it sends on."""

    shell_channel_class = Type(Channel)        # type: ignore[assignment]
    control_channel_class = Type(Channel)      # type: ignore[assignment]
    stdin_channel_class = Type(Channel)        # type: ignore[assignment]


def config(timeout: int = CELL_TIMEOUT) -> dict[str, dict[str, Any]]:
    """The traitlets configuration of an nbclient/nbconvert execution: this client, a cell timeout."""
    return {"AsyncKernelManager": {"client_class": CLIENT},
            "NotebookClient": {"timeout": timeout},
            "ExecutePreprocessor": {"timeout": timeout}}


def client(nb, cwd: str | os.PathLike[str], *, timeout: int = CELL_TIMEOUT, kernel_name: str = "python3",
           **kwargs: Any):
    """An nbclient.NotebookClient for ``nb`` run in ``cwd``, with this kernel client and a cell timeout."""
    import nbclient
    from traitlets.config import Config

    return nbclient.NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, config=Config(config(timeout)),
                                   resources={"metadata": {"path": str(cwd)}}, **kwargs)


def execute(nb, cwd: str | os.PathLike[str], *, env: dict[str, str] | None = None, **kwargs: Any):
    """Execute the notebook node ``nb`` in place in ``cwd`` (see :func:`client`); returns it. ``env``:
    the kernel's environment (default: this process's), e.g. with IOLAB_MODE=replay for it alone."""
    client(nb, cwd, **kwargs).execute(**({"env": env} if env is not None else {}))
    return nb


def install(prefix: str | os.PathLike[str], timeout: int = CELL_TIMEOUT) -> Path:
    """Write ``prefix/etc/jupyter/jupyter_nbconvert_config.json`` (the environment's own nbconvert
    configuration, which ``jupyter nbconvert`` of that environment reads): this client and a cell
    timeout for ``--execute``. Keys of an existing file that are not ours are kept."""
    path = Path(prefix) / "etc" / "jupyter" / "jupyter_nbconvert_config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        current = json.loads(path.read_text())
    except (OSError, ValueError):
        current = {}
    if not isinstance(current, dict):
        current = {}
    for section, values in config(timeout).items():
        if section != "NotebookClient":
            current.setdefault(section, {}).update(values)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(current, indent=1) + "\n")
    os.replace(tmp, path)
    return path


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m iolab.nbexec",
                                     description="configure nbconvert --execute with iolab's kernel client")
    sub = parser.add_subparsers(dest="cmd", required=True)
    inst = sub.add_parser("install", help="write PREFIX/etc/jupyter/jupyter_nbconvert_config.json")
    inst.add_argument("--prefix", default=sys.prefix)
    inst.add_argument("--timeout", type=int, default=CELL_TIMEOUT)
    a = parser.parse_args(sys.argv[1:] if args is None else args)
    path = install(a.prefix, a.timeout)
    print(f"wrote {path}: nbconvert --execute uses {CLIENT} and a {a.timeout} s cell timeout")
    return 0


if __name__ == "__main__":
    sys.exit(main())
