from iolab import fsinfo

SAMPLE = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
30 22 0:26 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw
40 22 0:40 / /scratch rw,relatime shared:9 - beegfs beegfs_nodev rw
41 40 0:41 / /scratch/my\\040data rw - fuse.s3fs s3fs rw,user_id=0
"""


def test_longest_mount_point_wins():
    assert fsinfo.mount_of("/scratch/x/y", SAMPLE).fstype == "beegfs"
    assert fsinfo.mount_of("/scratchy", SAMPLE).fstype == "ext4"
    assert fsinfo.mount_of("/dev/shm/f", SAMPLE).kind == "memory (tmpfs)"
    m = fsinfo.mount_of("/scratch/my data/obj", SAMPLE)
    assert m.mountpoint == "/scratch/my data" and m.kind == "object storage (s3fs-fuse)"


def test_options_are_the_mount_s_then_the_filesystem_s_each_once():
    # mountinfo gives the mount's options, then the superblock's: "rw" in both is one option, shown once
    assert fsinfo.mount_of("/x", SAMPLE).options == "rw,relatime,discard"
    assert fsinfo.mount_of("/scratch/my data/o", SAMPLE).options == "rw,user_id=0"
    ro = "22 1 254:0 / / ro,relatime shared:1 - ext4 /dev/vda rw,discard\n"
    assert fsinfo.mount_of("/x", ro).options == "ro,relatime,rw,discard"      # not the same option: both kept


def test_this_machine():
    assert fsinfo.fstype("/proc") == "proc"
    assert fsinfo.mount_of("/").mountpoint == "/"


# mountinfo lines as each parallel file system's client writes them (fstype, then source and options)
PARALLEL = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
60 22 0:52 / /lustre/scratch rw,relatime shared:30 - lustre 10.1.0.1@o2ib:10.1.0.2@o2ib:/scratch rw,flock,lazystatfs,encrypt
61 22 0:53 / /cephfs rw,relatime shared:31 - ceph 10.1.0.3:6789,10.1.0.4:6789:/ rw,name=admin,secret=<hidden>,acl
62 22 0:54 / /mnt/cephfuse rw,nosuid,nodev,relatime shared:32 - fuse.ceph-fuse ceph-fuse rw,user_id=0,group_id=0,allow_other
63 22 0:55 / /gpfs/fs1 rw,relatime shared:33 - gpfs fs1 rw
64 22 0:56 / /beegfs rw,relatime shared:34 - beegfs beegfs_nodev rw,cfgFile=/etc/beegfs/beegfs-client.conf
"""


def test_parallel_file_systems_are_recognised():
    kinds = {m: fsinfo.mount_of(m + "/x", PARALLEL) for m in ("/lustre/scratch", "/cephfs", "/mnt/cephfuse", "/gpfs/fs1",
                                                              "/beegfs")}
    assert {m: k.kind for m, k in kinds.items()} == {
        "/lustre/scratch": "parallel (Lustre)", "/cephfs": "parallel (CephFS)",
        "/mnt/cephfuse": "parallel (CephFS, FUSE)", "/gpfs/fs1": "parallel (GPFS)", "/beegfs": "parallel (BeeGFS)"}
    assert all(k.parallel for k in kinds.values())
    assert not fsinfo.mount_of("/home", PARALLEL).parallel
