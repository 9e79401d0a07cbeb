"""The process that reads Darshan logs for :func:`iolab.tools.darshan.read_log`, one fork per log.

``python -m iolab.tools._darshan_reader`` imports PyDarshan and pandas once, then serves requests on
stdin until it closes (the kernel that started it ended, however it ended). Each request is one
length-prefixed pickle ``(data, memory, timeout)``; for it the server forks a child that limits its
address space to what it has plus ``memory`` bytes (RLIMIT_AS), arms an alarm for ``timeout``
seconds, puts ``data`` in a memfd and reads it with :func:`iolab.tools.darshan.read_report`, and
writes back the pickled result. PyDarshan's C reader aborts, crashes or loops on some corrupt logs:
then only that child dies, and the server answers what happened. Answers, length-prefixed pickles on
stdout: ``("ok", pickled result)``, ``("error", (exception name, message))``, ``("died", exit status or
-signal)``, ``("timeout", seconds)``.

The server is single-threaded (BLAS and numexpr are told to use one thread), so forking it is safe;
no multiprocessing: its children import the parent's main script again, which a notebook or a
script without a ``__main__`` guard cannot stand.
"""
from __future__ import annotations

import os
import pickle
import signal
import sys
import time
from typing import Any

from . import darshan

send, receive = darshan.send_message, darshan.receive_message


def _child(w: int, data: bytes, memory: int, timeout: float) -> None:
    """In the forked child: limits, read, answer on ``w``, exit without running any cleanup."""
    import resource

    code = 0
    answer: tuple[str, Any]
    try:
        signal.alarm(max(1, int(timeout) + 1))        # SIGALRM ends the child even inside C code
        with open("/proc/self/statm") as f:
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (size + memory, size + memory))
        fd = os.memfd_create("darshan-log")
        os.write(fd, data)
        got = darshan.read_report(f"/proc/self/fd/{fd}")
        answer = ("ok", pickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL))
    except BaseException as e:                           # noqa: BLE001 (every refusal goes back as words)
        answer = ("error", (type(e).__name__, str(e)[:500]))
    try:
        with os.fdopen(w, "wb") as out:
            send(out, answer)
    except BaseException:                                # noqa: BLE001
        code = 1
    os._exit(code)


def _serve_one(data: bytes, memory: int, timeout: float) -> tuple[str, Any]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _child(w, data, memory, timeout)
    os.close(w)
    try:
        try:
            answer = receive(r, time.monotonic() + timeout)
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return ("timeout", timeout)
        _, status = os.waitpid(pid, 0)
        if answer is None:
            return ("died", -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
        return answer
    finally:
        os.close(r)


def main() -> int:
    stdin = sys.stdin.buffer
    stdout = os.fdopen(os.dup(1), "wb")                  # the answers; anything else written to fd 1
    os.dup2(2, 1)                                        # (by C code too) goes to stderr instead
    sys.stdout = sys.stderr
    import darshan.report  # noqa: F401  (loaded once, here; every child has it)

    send(stdout, ("ready", os.getpid()))
    while True:
        req = receive(stdin.fileno())
        if req is None:
            return 0
        data, memory, timeout = req
        send(stdout, _serve_one(data, memory, timeout))


if __name__ == "__main__":
    sys.exit(main())
