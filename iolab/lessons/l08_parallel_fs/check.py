"""Lesson 08 (a parallel file system): its exercise checks: each prints why a right answer is right, or raises
CheckFailed with a hint
(what every lesson shares is in :mod:`iolab.check`)."""
from __future__ import annotations

from collections.abc import Iterable
from ...check import close_to, fail, passed, same_items, whole
from ...units import MiB, format_size


def object_of(offset: int, stripe_unit: int, stripe_count: int, object_size: int) -> int:
    """The index of the object that holds file byte ``offset`` under a CephFS layout (RADOS striping:
    stripe units go round robin over ``stripe_count`` objects; when those are full, the next set)."""
    block = offset // stripe_unit
    per_object = object_size // stripe_unit
    object_set = block // (stripe_count * per_object)
    return object_set * stripe_count + block % stripe_count


def check_08_objects(answer: object, layouts) -> bool:
    """Exercise 08.1: the object index holding the file's byte 9 MiB + 1, for each layout of section 1
    (a dict layout -> index)."""
    f = layouts.frame.set_index("layout")
    expected = {name: object_of(9 * MiB + 1, int(r["stripe_unit"]), int(r["stripe_count"]), int(r["object_size"]))
                for name, r in f.iterrows()}
    if not isinstance(answer, dict):
        fail("answer with a dict: {layout name: object index}.")
    same_items(answer, expected, what="the layouts of your answer")
    wrong = [k for k in expected if whole(answer[k], f"the index for {k}") != expected[k]]
    if wrong:
        k = wrong[0]
        fail(f"{k}: count stripe units of {format_size(int(f.loc[k, 'stripe_unit']))} from the start; they go round "
             f"robin over {int(f.loc[k, 'stripe_count'])} object(s), each holding "
             f"{int(f.loc[k, 'object_size']) // int(f.loc[k, 'stripe_unit'])} of them before the next set begins.")
    return passed(f"{expected}: the layout alone decides it; every client computes the same, and CRUSH then "
                  "computes the object's OSD from its name.")


def check_08_cold_steps(answer: object, caches) -> bool:
    """Exercise 08.2: the steps of section 2 whose reads the OSDs served (their op_r_out_bytes grew by
    the file's size in every trial)."""
    df = caches.frame
    size = int(df["bytes"].max())
    expected = {s for s, g in df.groupby("step") if (g["osd_bytes_sent"] >= size).all()}
    if isinstance(answer, str) or not isinstance(answer, Iterable):
        fail("answer with a list of step names (the 'step' column).")
    same_items(answer, expected, what="your steps")
    return passed(f"only {sorted(expected)}: evicting the kernel's pages left ceph-fuse's own object cache, so "
                  "a cold read on a parallel file system client needs a fresh client.")


def check_08_replication(answer: object, replication) -> bool:
    """Exercise 08.3: the bytes the OSDs received per file byte in the size-3 pool (median of the trials)."""
    df = replication.frame
    three = df[df["pool_size"] == 3]
    expected = float(three["osd_bytes_per_file_byte"].median())
    primaries = float((three["osd_primary_bytes"] / three["file_bytes"]).median())
    replicas = float((three["osd_replica_bytes"] / three["file_bytes"]).median())
    one = float(df[df["pool_size"] == 1]["osd_bytes_per_file_byte"].median()) if (df["pool_size"] == 1).any() else None
    wrong = [(primaries, "those are the primaries only (op_w_in_bytes): each primary sends every byte on to the "
                         "pool's other copies, which count it in subop_w_in_bytes: add them"
                         + (" (the size-1 pool gives about that: it has no replicas)" if one and
                            abs(one - primaries) < 0.05 * primaries else "")),
             (replicas, "those are the replicas only (subop_w_in_bytes): add the primaries' op_w_in_bytes")]
    if one is not None:
        wrong.append((one, "that is the size-1 pool: the task asks for the pool of size 3"))
    close_to(answer, expected, rel=0.01, what="bytes at the OSDs per file byte", wrong=wrong)
    return passed(f"{expected:.2f}: the primary's op_w_in_bytes once, plus the replicas' subop_w_in_bytes twice.")
