"""Shared fixtures: skip live tests with a reason when a tool is missing; a private workspace per test."""
from __future__ import annotations

import contextlib
import glob
import importlib.util
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab import guard, workspace

TESTS = Path(__file__).resolve().parent

# make test-lesson L=NN runs tests/lessons/lNN/ (the folder is the index of a lesson's tests), the
# lesson's notebook and its exercise solution; tests/test_house.py keeps every lesson's folder there.
LESSONS = TESTS / "lessons"


def needs(*tools: str) -> pytest.MarkDecorator:
    """Skip unless every tool is here, naming the missing ones: THE rule for a test that needs a tool,
    a program on PATH or a Python package of PACKAGES (``needs("PyDarshan")``). On a test, a class, a
    module (``pytestmark = needs(...)``) or a parameter (``pytest.param(..., marks=needs(...))``)."""
    return pytest.mark.needs(*tools)


# the tools that are Python packages, not programs: needs() looks for their module
PACKAGES = {"PyDarshan": "darshan"}


def missing(*tools: str) -> list[str]:
    """Those of tools that are not here."""
    return [t for t in tools
            if (importlib.util.find_spec(PACKAGES[t]) is None if t in PACKAGES else shutil.which(t) is None)]


def _needed(item: pytest.Item) -> set[str]:
    return {t for mark in item.iter_markers("needs") for t in mark.args}


_running: list[pytest.Item | None] = [None]     # the test being set up, run or torn down


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _running[0] = item
    gone = missing(*sorted(_needed(item)))
    if gone:
        pytest.skip(f"not installed here: {', '.join(gone)}")


@pytest.fixture(autouse=True, scope="session")
def _pydarshan_only_where_declared() -> Iterator[None]:
    """The rule's check, in every run where PyDarshan is here: a test (or a fixture it uses) that reads a
    Darshan log through PyDarshan without needs("PyDarshan") fails, as it would fail, not skip, where
    PyDarshan is missing (iolab.tools.darshan._ask_reader is the one way to PyDarshan's reader)."""
    from iolab.tools import darshan

    real = darshan._ask_reader

    def ask(*args, **kwargs):
        item = _running[0]
        if item is not None and "PyDarshan" not in _needed(item):
            pytest.fail(f"{item.nodeid} reads a Darshan log with PyDarshan: mark it needs(\"PyDarshan\") "
                        "(tests/conftest.py), so that it skips where PyDarshan is not installed", pytrace=False)
        return real(*args, **kwargs)

    darshan._ask_reader = ask
    yield
    darshan._ask_reader = real


# IOR and mdtest: the builds of each version at /tmp/ior-<version>/bin (built beside the course, see
# DEVELOPERS.md); the one place the tests know where they are.
IOR_VERSIONS = ("3.3.0", "4.0.0")


def ior_dir(version: str = "4.0.0") -> str:
    """The directory of IOR/mdtest ``version``'s build (it may not exist)."""
    return f"/tmp/ior-{version}/bin"


def ior_tool(tool: str = "ior", version: str = "4.0.0") -> str | None:
    """The path of ``tool`` (ior or mdtest): ``version``'s build, else one on PATH; None when neither is."""
    built = f"{ior_dir(version)}/{tool}"
    return built if os.access(built, os.X_OK) else shutil.which(tool)


@pytest.fixture
def ior_on_path(monkeypatch):
    """``ior_on_path(version, tool="ior", mpirun=False, or_on_path=False)`` puts that build first on
    PATH for the test (and lets Open MPI run as root), or skips the test naming what is missing:
    the build (``or_on_path``: a ``tool`` on PATH will do), or mpirun."""

    def put(version: str, tool: str = "ior", *, mpirun: bool = False, or_on_path: bool = False) -> None:
        d = ior_dir(version)
        if mpirun and shutil.which("mpirun") is None:
            pytest.skip("mpirun is not here")
        if os.access(f"{d}/{tool}", os.X_OK):
            monkeypatch.setenv("PATH", f"{d}:{os.environ['PATH']}")
        elif not (or_on_path and shutil.which(tool)):
            pytest.skip(f"{tool} {version} is not built at {d}")
        for k in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"):
            monkeypatch.setenv(k, "1")

    return put


def is_root() -> bool:
    return os.geteuid() == 0


def mpi_leftovers_in_tmp(before: set[str] | None = None, settle: float = 15.0) -> set[str]:
    """Open MPI session directories of ours in the shared /tmp (ompi.<host>.<uid>/...); with ``before``,
    only those that appeared since and stay: another job of the same uid (a second `make test` beside
    this one, all as root on CI) has its own for as long as its mpirun lives, so an entry whose
    ``pid.<N>`` is alive is not a leftover, and others get ``settle`` seconds to go away."""
    def now() -> set[str]:
        return {p for d in glob.glob("/tmp/ompi.*") if os.lstat(d).st_uid == os.getuid()
                for p in [d, *glob.glob(f"{d}/*")]}

    def alive(p: str) -> bool:
        name = os.path.basename(p)
        return name.startswith("pid.") and name[4:].isdigit() and os.path.exists(f"/proc/{name[4:]}")

    if before is None:
        return now()
    deadline = time.monotonic() + settle
    while True:
        appeared = now() - before
        new = {p for p in appeared if not alive(p)}
        new -= {d for d in new if any(q.startswith(d + "/") for q in appeared - new)}   # a parent of a live one
        if not new or time.monotonic() > deadline:
            return new
        time.sleep(0.5)


@pytest.fixture
def ws(tmp_path):
    """A workspace under pytest's tmp dir with a 512 MiB budget, removed after the test."""
    with workspace.Workspace(budget="512MiB", base=tmp_path) as w:
        yield w


def all_consistent(claims) -> None:
    """Every claim a lesson printed re-checks true against its own evidence (iolab.explain)."""
    from iolab import explain

    assert claims, "no claims"
    for c in claims:
        assert isinstance(c, explain.Claim)
        assert c.consistent(), c.text


@pytest.fixture(params=["disk", "tmpfs"])
def place(request, tmp_path):
    """("disk" | "tmpfs", a private workspace there): lessons' claims measured live on both."""
    from iolab import fsinfo

    if request.param == "tmpfs":
        if not os.path.isdir("/dev/shm") or fsinfo.fstype("/dev/shm") != "tmpfs":
            pytest.skip("no tmpfs at /dev/shm")
        base = "/dev/shm"
    else:
        if fsinfo.fstype(tmp_path) in fsinfo.MEMORY_FS:
            pytest.skip("pytest's tmp dir is in memory here")
        base = tmp_path
    with workspace.Workspace(budget="512MiB", base=base) as ws:
        yield request.param, ws


def wait_until(cond, seconds: float) -> bool:
    """Whether cond() became true within ``seconds`` (asked every 0.05 s)."""
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@contextlib.contextmanager
def own_tmp_dir(prefix: str) -> Iterator[Path]:
    """A directory of the test's own in /tmp that a second user may pass through (0711; not pytest's
    tmp_path: /tmp/pytest-of-root is 0700, and other pytest runs of root remove old ones with rmtree,
    which walks into a mount a failed test left), removed afterwards without walking into any mount:
    FUSE daemons under it killed, its mounts lazily unmounted, then guard.remove_tree."""
    top = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        os.chmod(top, 0o711)
        yield top
    finally:
        for m in guard.mountpoints_under(top):
            for pid in guard.fuse_daemons(m):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            subprocess.run(["umount", "-l", m], capture_output=True, timeout=30)
        guard.remove_tree(top)
