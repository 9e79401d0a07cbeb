"""The instructor's class data (notebooks/instructor/class-results.ipynb): seed 001's mdtest exercise,
run by a whole class, compared with what each student did differently.

What each student's command does comes from mdtest's source (in 3.3 and 4.0 ``-y`` fsyncs a file only
after writing ``-w`` bytes into it: lesson 05); every sentence is checked against the class's numbers.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ... import explain, trials

CONFIG = ("options", "tasks", "nodes")


def _flags(options: str) -> dict[str, str | bool]:
    """'-n 10 -i 20 -y -w 4096' -> {'-n': '10', '-i': '20', '-y': True, '-w': '4096'}."""
    out: dict[str, str | bool] = {}
    words = str(options).split()
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("-") and i + 1 < len(words) and not words[i + 1].startswith("-"):
            out[w] = words[i + 1]
            i += 2
        else:
            out[w] = True
            i += 1
    return out


def syncs_each_file(options: str) -> bool:
    """Does this mdtest command line (3.3/4.0) fsync each file? Only -y with -w > 0 does."""
    f = _flags(options)
    try:
        return bool(f.get("-y")) and int(f.get("-w", 0)) > 0
    except (TypeError, ValueError):
        return False


def class_configs(md: pd.DataFrame) -> pd.DataFrame:
    """One row per student: options, tasks, nodes, and whether that command fsyncs each file."""
    cols = [c for c in CONFIG if c in md.columns]
    per = md.groupby("user")[cols].first().reset_index()
    per["fsync_per_file"] = per["options"].map(syncs_each_file)
    return per


def common_config(md: pd.DataFrame) -> dict[str, Any]:
    """The configuration most students ran (options, tasks, nodes)."""
    per = class_configs(md)
    cols = [c for c in CONFIG if c in per.columns]
    top = per.groupby(cols, dropna=False).size().idxmax()
    return dict(zip(cols, top if isinstance(top, tuple) else (top,)))


def _differences(row: Mapping[str, Any], common: Mapping[str, Any]) -> list[str]:
    out = []
    mine, theirs = _flags(row.get("options", "")), _flags(common.get("options", ""))
    for flag in sorted(set(mine) | set(theirs)):
        if mine.get(flag) != theirs.get(flag):
            if flag not in mine:
                out.append(f"no {flag}")
            elif mine[flag] is True:
                out.append(f"added {flag}")
            else:
                out.append(f"{flag} {mine[flag]}" + (f" (class: {theirs[flag]})" if flag in theirs else ""))
    for k, word in (("tasks", "tasks"), ("nodes", "nodes")):
        if k in row and k in common and row[k] != common[k]:
            out.append(f"{row[k]:g} {word} (class: {common[k]:g})")
    return out


def neighbours(md: pd.DataFrame) -> pd.DataFrame:
    """For each student's mdtest run on each filesystem: how many other students' mdtest runs overlapped
    it in time, on the same filesystem (``same_fs``) and on any (``any_fs``). Needs ``started`` and
    ``finished`` columns (mdtest's own "-- started at" / "-- finished at" lines); NaN without them."""
    cols = ["user", "filesystem", "same_fs", "any_fs"]
    if not {"started", "finished"} <= set(md.columns):
        runs = md[["user", "filesystem"]].drop_duplicates()
        return runs.assign(same_fs=float("nan"), any_fs=float("nan"))[cols]
    runs = md.groupby(["user", "filesystem"])[["started", "finished"]].first().reset_index()
    runs["t0"], runs["t1"] = pd.to_datetime(runs["started"]), pd.to_datetime(runs["finished"])
    same, anyfs = [], []
    for r in runs.itertuples():
        others = runs[(runs["user"] != r.user) & (runs["t0"] < r.t1) & (r.t0 < runs["t1"])]
        same.append(int(others.loc[others["filesystem"] == r.filesystem, "user"].nunique()))
        anyfs.append(int(others["user"].nunique()))
    return runs.assign(same_fs=same, any_fs=anyfs)[cols]


def outlier_causes(md: pd.DataFrame, out: pd.DataFrame) -> pd.DataFrame:
    """Each flagged measurement with what its student did differently from the class's most common
    configuration (computed from the saved options, tasks and nodes), what that difference does to
    mdtest, and the spread of its own iterations (max / min)."""
    common = common_config(md)
    rows = []
    for r in out.to_dict("records"):
        diff = _differences(r, common)
        if syncs_each_file(r.get("options", "")) and not syncs_each_file(common.get("options", "")):
            effect = "writes -w bytes into each file, so -y fsyncs each one"
            if r.get("operation") == "file removal":
                effect += ("; each file then owns a block when it is removed, and freeing a block can cost "
                           "a discard inside unlink (lesson 05, section 6)")
        elif diff and set(diff) <= {"no -y", "added -y"}:
            effect = "none expected: without -w, -y syncs nothing"
        elif any(d.endswith("(class: 1)") and "nodes" in d for d in diff):
            effect = ("ranks on two (fake) nodes of one host: they talk over TCP and share its cores and disk; "
                      "a phase lasts as long as its slowest rank")
        elif any("tasks" in d for d in diff):
            effect = "two ranks share the node's cores; a phase lasts as long as its slowest rank"
        elif diff:
            effect = "a different command"
        else:
            effect = "same command, tasks and nodes: neighbours or noise"
        spread = r["max"] / r["min"] if r.get("min") else float("nan")
        rows.append({"user": r["user"], "filesystem": r["filesystem"], "operation": r["operation"],
                     "x_median": r.get("x_median"), "differs": "; ".join(diff) or "nothing",
                     "what it does": effect, "iteration_spread": spread})
    table = pd.DataFrame(rows, columns=["user", "filesystem", "operation", "x_median", "differs", "what it does",
                                        "iteration_spread"])
    near = neighbours(md).rename(columns={"same_fs": "neighbours_same_fs", "any_fs": "neighbours_any_fs"})
    return table.merge(near, on=["user", "filesystem"], how="left")


def _crowding(near: pd.DataFrame, fs_label: str, user: str, base_users: set[str]) -> str | None:
    """'userX's run on fs overlapped N other students' runs on it, the class's a median of M', when the
    two differ (None when they do not, or when the runs' times are not known)."""
    here = near[near["filesystem"] == fs_label]
    me = here.loc[here["user"] == user, "same_fs"].dropna()
    base = here.loc[here["user"].isin(base_users), "same_fs"].dropna()
    if not len(me) or not len(base) or float(me.iloc[0]) == float(base.median()):
        return None
    return (f"{user}'s run on {fs_label} overlapped {int(me.iloc[0])} other students' runs on it, the class's "
            f"runs a median of {base.median():g}: runs that share one filesystem at the same time slow each "
            "other down, and here that outweighed the options")


def _overlaps(near: pd.DataFrame, fs_label: str, user: str, base_users: set[str]) -> str | None:
    """'its run overlapped N other students' runs on fs, the class's a median of M' (None: times unknown)."""
    here = near[near["filesystem"] == fs_label]
    me = here.loc[here["user"] == user, "same_fs"].dropna()
    base = here.loc[here["user"].isin(base_users), "same_fs"].dropna()
    if not len(me) or not len(base):
        return None
    return (f"its run overlapped {int(me.iloc[0])} other students' runs on {fs_label}, the class's runs a median "
            f"of {base.median():g}")


def _options(g: pd.DataFrame) -> str:
    return str(g["fs_options"].dropna().iloc[0]) if "fs_options" in g and g["fs_options"].notna().any() else ""


def fsync_cost_reason(user: str, rate: float | None, median: float | None, *, factor: float, kind: str = "",
                      options: str = "", near: str | None = None) -> str:
    """Why a student whose command fsyncs each file was not ``factor`` times slower than the class: what
    the write and fsync added to each creation, computed from the two rates (a creation of theirs
    against the class median's), against what the slowdown needed them to cost."""
    if not rate or not median:
        return "the rates needed to tell were not measured"
    mine, base = 1e6 / rate, 1e6 / median               # µs per creation
    added, needed = mine - base, (factor - 1) * base
    tail = f" ({near})" if near else ""
    if added <= 0:
        sync = bool({"sync", "dirsync"} & set(options.split(",")))
        return (f"{user}'s creations took no longer than the class median's ({mine:,.0f} against {base:,.0f} µs "
                f"each): the 4 KiB write and its fsync added nothing this comparison can see"
                + ("; on a filesystem mounted sync every creation is already written through before the call "
                   "returns, so fsync finds little left to do" if sync else
                   "; the difference between two runs was larger than what they cost") + tail)
    device = kind.startswith("local")
    answered = ("so the device acknowledged each flush within that time: a flush that cheap is answered from a "
                "write cache (a virtual disk's host, an SSD's protected cache), not by the media" if device else
                "so each fsync was answered within that time")
    return (f"each creation took {user} {added:,.0f} µs more than the class median's ({mine:,.0f} against "
            f"{base:,.0f} µs): that is all the 4 KiB write and its fsync cost (if the runs were otherwise alike), "
            f"{answered}; a {factor:g}x slowdown needed them to cost {needed:,.0f} µs per file{tail}")


def class_claims(md: pd.DataFrame, *, operation: str = "file creation", factor: float = 2.0, show: bool = True) -> list[explain.Claim]:
    """What each student's difference from the class predicts for ``operation``, checked against the
    median of the students who ran the class's most common configuration, on each filesystem:
    a command that fsyncs each file (-y with -w) is predicted slower on every filesystem with a
    device behind it; -y added or left out without -w is predicted to change nothing."""
    common = common_config(md)
    per = class_configs(md)
    cols = [c for c in CONFIG if c in per.columns]
    is_common = per[cols].apply(lambda r: all(r[c] == common[c] for c in cols), axis=1)
    base_users = set(per.loc[is_common, "user"])
    part = md[md["operation"] == operation]
    near = neighbours(md)
    claims = []
    for r in per[~is_common].to_dict("records"):
        diff = _differences(r, common)
        fsyncs = r["fsync_per_file"] and not syncs_each_file(common["options"])
        only_y = diff and set(diff) <= {"no -y", "added -y"}
        if not (fsyncs or only_y):
            continue
        for fs_label, g in part.groupby("filesystem", sort=True):
            # each student's own median: one vote each, however many rows a student saved
            base = g.loc[g["user"].isin(base_users)].groupby("user")["mean"].median()
            mine = g.loc[g["user"] == r["user"], "mean"]
            if not len(mine):
                continue
            med = float(base.median()) if len(base) else None
            val = float(mine.iloc[0])
            memory = str(g["fs_kind"].iloc[0]).startswith("memory") if "fs_kind" in g else False
            crowd = _crowding(near, fs_label, r["user"], base_users)
            near_text = _overlaps(near, fs_label, r["user"], base_users)
            if fsyncs and not memory:
                claims.append(explain.expect(
                    f"{r['user']} ({'; '.join(diff)}: an fsync per file) creates files at least {factor:g}x "
                    f"slower than the class median on {fs_label}",
                    explain.greater("class median", med, r["user"], val, by=factor),
                    yes=lambda e, u=r["user"]: f"{e[u]:,.0f} against {e['class median']:,.0f} per second",
                    no=lambda e, u=r["user"]: f"{u} created {e[u]:,.0f} per second, the class median was "
                                              f"{e['class median']:,.0f}",
                    why=fsync_cost_reason(r["user"], val, med, factor=factor, kind=str(g["fs_kind"].iloc[0])
                                          if "fs_kind" in g else "", options=_options(g), near=near_text),
                    show=False))
            elif only_y:
                why = crowd or ("the jobs ran side by side on two shared cores and one disk: a neighbour's run "
                                "can slow or spare one student's, whatever the options")
                claims.append(explain.expect(
                    f"{r['user']} ({'; '.join(diff)}) creates files within {factor:g}x of the class median on "
                    f"{fs_label}: without -w, -y syncs nothing",
                    explain.within(r["user"], val, "class median", med, rel=1 - 1 / factor),
                    yes=lambda e, u=r["user"]: f"{e[u]:,.0f} against {e['class median']:,.0f} per second",
                    no=lambda e, u=r["user"]: f"{u} created {e[u]:,.0f} per second, the class median was "
                                              f"{e['class median']:,.0f}",
                    why=why, show=False))
    for c in claims:
        print(c.text)
    return claims


def class_filesystems_claims(md: pd.DataFrame, *, operation: str = "file creation", show: bool = True) -> list[explain.Claim]:
    """The students who ran the class's most common command, each one a trial, on each filesystem,
    compared by the course's one rule (:func:`iolab.explain.beyond`: a filesystem is faster only when
    its slowest student beat the other's fastest; otherwise too close to call here), in the order their
    layers predict: memory fastest, a sync-mounted filesystem slower than the same filesystem mounted
    normally, an object store through FUSE slowest. Which is which comes from the data (fs_kind,
    fstype, fs_options: the mount options results.save keeps), never from a filesystem's label."""
    common = common_config(md)
    per = class_configs(md)
    cols = [c for c in CONFIG if c in per.columns]
    base = set(per.loc[per[cols].apply(lambda r: all(r[c] == common[c] for c in cols), axis=1), "user"])
    part = md[md["operation"] == operation]
    same = part[part["user"].isin(base)]
    t = trials.from_values({fs: list(g["mean"]) for fs, g in same.groupby("filesystem", sort=True)},
                           unit="per second", higher=True)
    names = t.settings
    kinds = part.groupby("filesystem")["fs_kind"].first() if "fs_kind" in part else pd.Series(dtype=str)
    mem = [f for f in names if str(kinds.get(f, "")).startswith("memory")]
    obj = [f for f in names if str(kinds.get(f, "")).startswith("object storage")]
    opts = part.groupby("filesystem")["fs_options"].first() if "fs_options" in part else pd.Series(dtype=object)
    types = part.groupby("filesystem")["fstype"].first() if "fstype" in part else pd.Series(dtype=object)
    sync = [f for f in names if isinstance(opts.get(f), str) and {"sync", "dirsync"} & set(opts[f].split(","))]
    # the whole configuration the students were picked by: their options alone matched more of them
    with_ = []
    for k, word in (("tasks", "task"), ("nodes", "node")):
        if k in common and common[k] == common[k]:
            with_.append(f"{common[k]:g} {word}{'' if common[k] == 1 else 's'}")
    who = (f"the {len(base)} students who ran {common.get('options', 'the common command')!r}"
           + (f" with {' on '.join(with_)}" if with_ else ""))
    close = f"over {who}, one run each: more students (or more runs each) would separate them"

    def said(a: str, b: str, by: float = 1.0):
        return lambda ev: f"{explain.spread_text(t.relation(a, b, by=by))}, over {who}"
    claims = []
    for m in mem:
        for other in [f for f in names if f != m]:
            claims.append(t.expect(
                f"memory ({m}) creates files faster than {other}", m, other, yes=said(m, other),
                why="the machine was so busy that memory work waited as long as the device did", close=close,
                show=False))
    for s in sync:
        for p in [f for f in names if f not in mem + obj + sync and types.get(f) == types.get(s)]:
            claims.append(t.expect(
                f"the sync-mounted filesystem ({s}) creates files at least 2x slower than {p}: each creation "
                "is written through to the device before the call returns", p, s, by=2, yes=said(p, s, 2),
                why="the device acknowledged the writes at once (a VM host's cache)", close=close, show=False))
    for o in obj:
        for other in [f for f in names if f not in obj]:
            claims.append(t.expect(
                f"the object store through FUSE ({o}) creates files slower than {other}: each creation is a "
                "FUSE round trip and an HTTP request", other, o, yes=said(other, o),
                why="the FUSE client answered from its own cache", close=close, show=False))
    for c in claims:
        print(c.text)
    return claims
