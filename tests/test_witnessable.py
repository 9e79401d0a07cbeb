"""witness.witnessable: what the kernel can witness on each kind of filesystem, and what is inferred."""
import json
from pathlib import Path

import pytest

from iolab import fsinfo, witness

MOUNTS = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
23 22 259:1 / /data rw,relatime shared:2 - xfs /dev/nvme0n1p1 rw
30 22 0:26 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw
31 22 0:27 / /home rw,relatime shared:5 - nfs4 fs1:/home rw,vers=4.2
32 22 0:28 / /objects rw,relatime shared:6 - fuse.s3fs s3fs rw,user_id=0
33 22 0:29 / /cephfs rw,relatime shared:7 - ceph 10.0.0.1:6789:/ rw,name=admin
34 22 0:30 / /cephfuse rw,relatime shared:8 - fuse.ceph-fuse ceph-fuse rw,user_id=0
35 22 0:31 / /lustre rw,relatime shared:9 - lustre 10.0.0.2@o2ib:/scratch rw,flock
36 22 0:32 / /gpfs rw,relatime shared:10 - gpfs work rw
37 22 0:33 / /beegfs rw,relatime shared:11 - beegfs beegfs_nodev rw
38 22 0:34 / /weird rw,relatime shared:12 - zonefs zone rw
"""


def answer(path):
    return witness.witnessable(path, MOUNTS)


@pytest.mark.parametrize("path, device", [("/home2/x", "vda"), ("/data/x", "nvme0n1p1")])
def test_local_disk_counted_and_its_device_witnesses(path, device):
    w = answer(path)
    assert w.own_bytes == witness.COUNTED and "submit_bio" in w.own_why
    assert w.device == device and w.counters is None


def test_tmpfs_has_nothing_to_count():
    w = answer("/dev/shm/f")
    assert w.own_bytes == witness.NONE and w.device is None and "memory" in w.device_why


def test_nfs_counted_no_device():
    w = answer("/home/me/f")
    assert w.own_bytes == witness.COUNTED and "nfs_readahead" in w.own_why
    assert w.device is None and "mountstats" in w.counters


def test_any_fuse_is_not_the_readers():
    w = answer("/objects/k")
    assert w.own_bytes == witness.NOT_READER and "0 proves nothing" in w.own_why and w.device is None


def test_ceph_kernel_client_partly_counted_osds_witness():
    w = answer("/cephfs/f")
    assert w.kind == "parallel (CephFS)" and w.own_bytes == witness.PARTLY
    assert "netfs" in w.own_why and w.device is None and "OSDs' perf counters" in w.counters


def test_ceph_fuse_not_the_readers_osds_witness():
    w = answer("/cephfuse/f")
    assert w.own_bytes == witness.NOT_READER and "object cache" in w.own_why
    assert w.device is None and "OSDs' perf counters" in w.counters and "admin socket" in w.counters


def test_lustre_partly_counted():
    w = answer("/lustre/run/f")
    assert w.own_bytes == witness.PARTLY and "llite" in w.own_why and w.device is None and "OST" in w.device_why


def test_gpfs_unknown():
    w = answer("/gpfs/f")
    assert w.own_bytes == witness.UNKNOWN and "proprietary" in w.own_why and w.device is None


def test_beegfs_may_count_over():
    w = answer("/beegfs/f")
    assert w.own_bytes == witness.UPPER and "own cache" in w.own_why and w.device is None


def test_a_filesystem_iolab_does_not_know():
    w = answer("/weird/f")
    assert w.own_bytes == witness.UNKNOWN and w.device is None


def test_every_parallel_kind_says_what_is_inferred_and_prints():
    for path in ("/cephfs", "/cephfuse", "/lustre", "/gpfs", "/beegfs"):
        w = answer(path)
        assert fsinfo.mount_of(path, MOUNTS).parallel
        assert "server" in w.inferred
        text = str(w)
        assert w.fstype in text and w.own_bytes in text and "inferred:" in text


def test_this_machine_workspace(tmp_path):
    w = witness.witnessable(tmp_path)
    assert w.fstype == fsinfo.fstype(tmp_path)
    assert set(w.row()) >= {"own bytes", "device", "inferred"}
    if witness.task_io() is None:
        assert w.own_bytes in (witness.UNKNOWN, witness.NONE)
    if witness.block_device(tmp_path) is not None and w.own_bytes == witness.COUNTED:
        assert w.device == witness.block_device(tmp_path).name


def test_no_task_accounting_makes_own_bytes_unknown(tmp_path, monkeypatch):
    monkeypatch.setattr(witness, "task_io", lambda pid="self": None)
    w = witness.witnessable(tmp_path)
    assert w.own_bytes in (witness.UNKNOWN, witness.NONE)
    if w.own_bytes == witness.UNKNOWN:
        assert "task I/O accounting" in w.own_why


NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@pytest.mark.parametrize("name, calls", [
    ("04-ior-pitfalls", ["witness.witnessable("]),
    ("05-mdtest-metadata", ["witness.witnessable("]),
    ("08-parallel-fs", ["witness.witnessable(", "witness.witnessable_mount("]),
])
def test_lessons_print_what_can_be_witnessed_near_their_start(name, calls):
    cells = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())["cells"]
    code = [i for i, c in enumerate(cells) if c["cell_type"] == "code"
            and all(call in "".join(c["source"]) for call in calls)]
    assert code, f"lesson {name} does not print witness.witnessable for its workspace"
    i = code[0]
    assert i < len(cells) // 2, "the cell should sit near the lesson's start, before its measurements"
    prose = "".join(cells[i - 1]["source"])
    assert cells[i - 1]["cell_type"] == "markdown" and "witness" in prose and "infer" in prose
    assert not any(ch.isdigit() for ch in prose), "the prose holds everywhere: no measured figure in it"


def test_the_answer_names_the_path_and_its_mount():
    text = str(answer("/lustre/run/f"))
    assert text.startswith("/lustre/run/f is on /lustre: lustre (parallel (Lustre))")


def test_a_path_not_written_yet_is_answered_from_its_directory(tmp_path):
    later = witness.witnessable(tmp_path / "not" / "yet")
    now = witness.witnessable(tmp_path)
    assert (later.own_bytes, later.device, later.mountpoint) == (now.own_bytes, now.device, now.mountpoint)
