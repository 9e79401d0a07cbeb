"""Throwaway real unix users, for the tests of what one student can do to another (root only).

    with unix_users.made(2, group="iolabclass") as (mallory, alice):
        code, out = unix_users.as_user(alice, lambda: results.save(...), env={"TMPDIR": ...})

:func:`made` creates system users with ``useradd`` (and a group with ``groupadd``) and removes them
afterwards, also when the test fails. :func:`as_user` runs a function in a forked child that has
become that user (its uid, gid and groups, as ``runuser`` sets them): the child keeps this
interpreter and its imports, so it needs no Python the user could execute on its own (this one may
live in root's home), and a child that hangs or eats memory is killed by the parent, not waited for.
"""
from __future__ import annotations

import contextlib
import json
import os
import pwd
import resource
import secrets
import select
import shutil
import signal
import subprocess
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest

TOOLS = ("useradd", "userdel", "groupadd", "groupdel")


def why_not() -> str:
    """Why real second users cannot be made here ("" when they can)."""
    if os.geteuid() != 0:
        return "needs root: it makes throwaway unix users (useradd) and acts as them"
    missing = [t for t in TOOLS if shutil.which(t) is None]
    return f"needs {', '.join(missing)} to make throwaway unix users" if missing else ""


needs_users = pytest.mark.skipif(bool(why_not()), reason=why_not() or "-")


@contextlib.contextmanager
def made(n: int, group: str | None = None) -> Iterator[list[pwd.struct_passwd]]:
    """n new system users (no home, no login shell), members of ``group`` (made too) when given."""
    names = [f"iolt{secrets.token_hex(3)}" for _ in range(n)]
    done: list[str] = []
    try:
        if group:
            subprocess.run(["groupadd", "--system", group], check=True, capture_output=True, timeout=30)
        for name in names:
            subprocess.run(["useradd", "--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin",
                            *(["-G", group] if group else []), name], check=True, capture_output=True, timeout=30)
            done.append(name)
        yield [pwd.getpwnam(name) for name in names]
    finally:
        for name in done:
            subprocess.run(["userdel", name], capture_output=True, timeout=30)
        if group:
            subprocess.run(["groupdel", group], capture_output=True, timeout=30)


def _vm_size() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def as_user(user: pwd.struct_passwd | None, fn: Callable[[], Any], *, env: dict[str, str] | None = None,
            timeout: float = 120, more_memory: int | None = None,
            prepare: Callable[[], Any] | None = None) -> tuple[str, Any]:
    """Run fn() as ``user`` (None: stay root) in a forked child; ("ok", its JSON-able result),
    ("error", "Type: message"), or ("timeout", None) when it ran past ``timeout`` s (then it is killed).
    more_memory: the child may map at most this many bytes beyond what it inherits (RLIMIT_AS).
    prepare: called in the child while it is still root, before it becomes the user (its failure is
    the result's error)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                     # pragma: no cover - runs in the child
        code = 1
        try:
            os.close(r)
            os.setsid()
            if prepare is not None:
                try:
                    prepare()
                except BaseException as e:
                    data = json.dumps(["error", f"prepare: {type(e).__name__}: {e}"]).encode()
                    while data:
                        data = data[os.write(w, data):]
                    raise
            if more_memory is not None:
                limit = _vm_size() + more_memory
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            if user is not None:
                os.initgroups(user.pw_name, user.pw_gid)
                os.setgid(user.pw_gid)
                os.setuid(user.pw_uid)
                os.environ.update({"USER": user.pw_name, "LOGNAME": user.pw_name, "HOME": user.pw_dir})
            os.environ.update(env or {})
            try:
                out = ["ok", fn()]
                code = 0
            except BaseException as e:
                out = ["error", f"{type(e).__name__}: {e}\n{traceback.format_exc()[-2000:]}"]
            data = json.dumps(out, default=str).encode()
            while data:
                data = data[os.write(w, data):]
        finally:
            os._exit(code)
    os.close(w)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return "timeout", None
            b = os.read(r, 1 << 16)
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(r)
    os.waitpid(pid, 0)
    if not chunks:
        return "error", "the child died without a word"
    status, value = json.loads(b"".join(chunks))
    return status, value
