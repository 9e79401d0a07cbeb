"""Shared fixtures: skip live tests with a reason when a tool is missing; a private workspace per test."""
from __future__ import annotations

import glob
import os
import shutil

import pytest

from iolab import workspace


def needs(*tools: str) -> pytest.MarkDecorator:
    """Skip unless every tool is on PATH, naming the missing ones."""
    missing = [t for t in tools if shutil.which(t) is None]
    return pytest.mark.skipif(bool(missing), reason=f"not installed here: {', '.join(missing)}")


def is_root() -> bool:
    return os.geteuid() == 0


def mpi_leftovers_in_tmp() -> set[str]:
    """Open MPI session directories of ours in the shared /tmp (ompi.<host>.<uid>/...)."""
    return {p for d in glob.glob("/tmp/ompi.*") if os.lstat(d).st_uid == os.getuid()
            for p in [d, *glob.glob(f"{d}/*")]}


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
