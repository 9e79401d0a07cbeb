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


def test_this_machine():
    assert fsinfo.fstype("/proc") == "proc"
    assert fsinfo.mount_of("/").mountpoint == "/"
