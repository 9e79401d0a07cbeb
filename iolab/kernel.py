"""The course's Jupyter kernel: IPython's own kernel with its debugger turned off.

Why: ipykernel's debugger, once a student turns it on in JupyterLab, starts debugpy, and debugpy
listens for its client on a TCP port of 127.0.0.1. Loopback is the whole node's. While JupyterLab is
attached, debugpy refuses a second client ("already being debugged"); once the student turns the
debugger off, JupyterLab detaches and the port stays open, and any user of the node who connects to
it can attach and evaluate code as that student. Measured here with ipykernel 7.4 and debugpy
1.8.22: a second unix user's `evaluate` of `os.getuid()` came back with the student's uid
(tests/test_kernel.py shows it against a plain kernel, and that this one never opens the port).

This kernel answers every debug request with a refusal and does not list "debugger" among its
features, so JupyterLab does not offer the debugger. `python -m iolab.kernel install` writes the
kernel spec (`make setup` does it for `make lab`; docs/jupyterhub.md for a hub).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ipykernel.ipkernel import IPythonKernel
from ipykernel.kernelapp import IPKernelApp
from ipykernel.kernelspec import install as install_spec

NAME = "iolab"
DISPLAY_NAME = "iolab (HPC storage I/O)"
REFUSED = ("the debugger is off in the iolab kernel: debugpy would listen on a TCP port of 127.0.0.1 "
           "that every user of this machine can reach (docs/jupyterhub.md, 'Kernel traffic')")


class Kernel(IPythonKernel):
    """IPython's kernel without the debugger: debug requests are refused and never start debugpy."""

    @property
    def kernel_info(self) -> dict:
        info = dict(super().kernel_info)
        info["supported_features"] = [f for f in info.get("supported_features", []) if f != "debugger"]
        info["debugger"] = False                    # the key of protocol 5.3, which JupyterLab also reads
        return info

    async def do_debug_request(self, msg: dict) -> dict:
        return {"type": "response", "request_seq": msg.get("seq", 0), "seq": 0, "success": False,
                "command": msg.get("command", ""), "message": REFUSED}


def argv(python: str | None = None) -> list[str]:
    """The kernel spec's command line."""
    return [python or sys.executable, "-m", "iolab.kernel", "-f", "{connection_file}"]


def install(prefix: str | None = None, *, user: bool = False, name: str = NAME, display_name: str = DISPLAY_NAME,
            env: dict[str, str] | None = None) -> Path:
    """Write the kernel spec ``name`` (under ``prefix``/share/jupyter/kernels, or the user's) that starts
    this kernel with this Python; ``env`` goes into kernel.json. Returns the spec's directory."""
    path = Path(install_spec(kernel_name=name, display_name=display_name, prefix=prefix, user=user, env=env))
    spec_file = path / "kernel.json"
    spec = json.loads(spec_file.read_text())
    spec["argv"] = argv()
    spec.setdefault("metadata", {})["debugger"] = False
    tmp = spec_file.with_name(".kernel.json.tmp")
    tmp.write_text(json.dumps(spec, indent=1) + "\n")
    os.replace(tmp, spec_file)
    return path


def _install_main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m iolab.kernel install",
                                     description="install the iolab kernel spec (IPython without the debugger)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--prefix", help="install under PREFIX/share/jupyter/kernels")
    where.add_argument("--user", action="store_true", help="install for the current user only")
    parser.add_argument("--name", default=NAME)
    parser.add_argument("--display-name", default=DISPLAY_NAME)
    parser.add_argument("--env", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                        help="an environment variable for every kernel of this spec (repeatable)")
    a = parser.parse_args(args)
    path = install(a.prefix, user=a.user, name=a.name, display_name=a.display_name, env=dict(a.env) or None)
    print(f"installed the kernel spec {a.name!r} in {path}")
    return 0


def main(args: list[str] | None = None) -> int:
    """``python -m iolab.kernel -f FILE``: run the kernel (as ipykernel_launcher does);
    ``python -m iolab.kernel install [...]``: write its kernel spec."""
    args = sys.argv[1:] if args is None else args
    if args[:1] == ["install"]:
        return _install_main(args[1:])
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]          # as ipykernel_launcher: the kernel puts the working directory back itself
    # by name: run as `-m`, this file is __main__, and the kernel is the class of the module iolab.kernel
    IPKernelApp.launch_instance(argv=args, kernel_class="iolab.kernel.Kernel")
    return 0


if __name__ == "__main__":
    sys.exit(main())
