"""Lesson 08's sections when a daemon of the cluster has died (issue 32): the section's error names the
daemon (the cluster's DaemonDied), not the bare OSError of the read it cut short. No cluster needed."""
from __future__ import annotations

import errno

import pytest

from iolab.ceph import DaemonDied
from iolab.lessons.l08_parallel_fs import sections


class Failed:
    """What a section sees of a cluster whose watch found osd.1 dead."""
    failure = DaemonDied("ceph osd.1 (pid 4242) of the cluster in /w/ceph-1 ended at 21:40:03 (killed by SIGKILL)")
    dir = None


def _cut_read(c):
    raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")


def test_a_read_cut_short_by_a_dead_daemon_raises_the_message_naming_it(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "auto")
    with pytest.raises(DaemonDied, match="osd.1 .*SIGKILL") as e:
        sections._section(Failed(), "caches", _cut_read, sections.parse_caches, sections.caches_claims,
                          show=False)
    assert isinstance(e.value.__cause__, OSError)


def test_without_a_dead_daemon_the_error_is_the_reads_own(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "auto")

    class Alive(Failed):
        failure = None
    with pytest.raises(OSError, match="not connected"):
        sections._section(Alive(), "caches", _cut_read, sections.parse_caches, sections.caches_claims,
                          show=False)
