"""A class on a real JupyterHub: several students at once, end to end.

``tests/hub_class.py`` sets the class up as docs/jupyterhub.md says (read-only class environment,
the shared ``iolab`` kernel with its kernel.json, per-student IOLAB_WORKDIR from the spawner, the
class results directory, PAM users) and removes all of it afterwards. The students log in through
the hub's login form, make a token, start their servers through the REST API and run lessons through
kernel websockets, at the same time. As root only; elsewhere every test skips and says why.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import shutil
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest
from iolab.lessons.l08_parallel_fs import sections as parallel_fs

from hub_class import (ROOT, SYSTEM_PATH, CellRun, HubClass, NotebookRun, Sampler, Student, _cmdline, _listening,
                       _listening_uids, _pids, _socket_inodes, _uid_of, code_cells, processes_of, together, why_not)

WHY_NOT = why_not()


def on_a_hub(test):
    """Slow, root only: skipped with the reason elsewhere (IOLAB_HUB_TESTS=skip skips on purpose)."""
    for mark in (pytest.mark.slow, pytest.mark.hub, pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")):
        test = mark(test)
    return test

# what every student runs, in this order, each in a new session on the course's kernel
LESSONS = ("notebooks/01-page-cache.ipynb", "notebooks/03-strace-syscalls.ipynb",
           "notebooks/06-fuse-object-storage.ipynb", "exercises/01-page-cache.ipynb")

# appended to every notebook run: where this kernel's workspace is, as the kernel sees it
FACTS = """\
import json, os, stat, sys
from iolab import workspace
_ws = workspace.session()
_st, _wd = os.stat(_ws.root), os.stat(os.environ["IOLAB_WORKDIR"])
print(json.dumps({"uid": os.getuid(), "ws": str(_ws.root), "workdir": os.environ.get("IOLAB_WORKDIR"),
                  "budget": os.environ.get("IOLAB_BUDGET"), "results": os.environ.get("IOLAB_RESULTS"),
                  "python": sys.executable, "cwd": os.getcwd(), "ws_owner": _st.st_uid,
                  "kernel": type(get_ipython().kernel).__module__,
                  "ws_mode": stat.S_IMODE(_st.st_mode), "workdir_mode": stat.S_IMODE(_wd.st_mode)}))
"""

# the class exercise of docs/jupyterhub.md section 4: measure, then save it to the class directory
SAVE_RESULTS = """\
import json
from iolab import recordings, results, workspace
from iolab.tools import mdtest
ws = workspace.session()
opts = mdtest.Options(files=10, iterations=3, sync=True)
out = recordings.live_or_recorded(lambda: mdtest.run(opts, 2, on=ws.root), "mdtest/rates-tmp-4.0.0",
                                  requires=("mdtest", "mpirun"), parse=mdtest.parse)
results.save(mdtest.to_frame(out.data), tool="mdtest", path=ws.root, filesystem="scratch",
             options=opts.argv(), outcome=out, notes="hub test")
print(json.dumps({"mode": out.mode, "file": str(results.user_file())}))
"""


@pytest.fixture(scope="module")
def hub():
    # 2 GiB: lesson 08's cluster (OSDs' sparse files, logs, the mounts' files) counts against the budget
    with HubClass(students=2, budget="2GiB") as h:
        built = f"built in {h.env.built_seconds:.0f} s" if h.env.built_seconds is not None else "cached"
        print(f"\nclass environment: {h.env.root} ({built}, course copied in {h.env.synced_seconds:.1f} s); "
              f"hub started in {h.hub_start_seconds:.1f} s")
        yield h
    assert h.gone() == [], "the class left things behind"


def ready(st: Student) -> Student:
    """Logged in, with a running server."""
    if st.token is None:
        st.login()
    model = st.hub_api("GET", f"users/{st.name}")
    if not (model.get("servers") or {}).get("", {}).get("ready"):
        st.spawn()
    return st


def run_lessons(st: Student) -> list[NotebookRun]:
    runs = []
    for path in LESSONS:
        runs.append(st.run_notebook(path, after=[FACTS]))
        if not runs[-1].ok:
            break
    else:
        runs.append(st.run_notebook("class-exercise.ipynb", cells=[SAVE_RESULTS], after=[FACTS]))
    return runs


# lesson 08, run by the first student while the second runs the other lessons: its private Ceph cluster
LESSON08 = "notebooks/08-parallel-fs.ipynb"

# after every section, before the lesson's last cell stops the cluster: where it is, and how each section ran
CLUSTER_FACTS = """\
import json, os
print(json.dumps({"uid": os.getuid(), "live": cluster is not None,
                  "dir": str(cluster.dir) if cluster else None, "conf": str(cluster.conf) if cluster else None,
                  "keyring": str(cluster.keyring) if cluster else None,
                  "port": cluster.ports[0] if cluster else None,
                  "mounts": {k: str(v) for k, v in cluster.mounts.items()} if cluster else {},
                  "modes": {k: v.mode for k, v in dict(layouts=layouts, caches=caches, ior2=ior2, meta=meta,
                                                       coh=coh, shared=shared, repl=repl).items()}}))
"""


BANNER = ("import socket, sys\ns = socket.create_connection(('127.0.0.1', int(sys.argv[1])), 10)\n"
          "s.settimeout(10)\nprint(s.recv(8))")


@dataclasses.dataclass
class Lesson08:
    run: NotebookRun
    facts: dict                              # CLUSTER_FACTS, while the cluster was up
    daemons: list[tuple[int, str, int]]      # (pid, command, uid) of the processes that name its directory
    others: dict[str, subprocess.CompletedProcess]   # what the other student tried, and the owner's control
    listening: list[tuple[str, int]]         # the owner's listening sockets while the cluster was up
    peak_rss: int                            # the owner's processes, summed, at the sampled peak
    peak_ceph_rss: int                       # of those, the cluster's daemons and clients


class RssPeak:
    """The peak of one uid's summed resident memory: all its processes, and its Ceph daemons and clients."""

    def __init__(self, uid: int, interval: float = 0.5):
        self.uid, self.interval = uid, interval
        self.total = self.ceph = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _rss(pid: int) -> int:
        with contextlib.suppress(OSError, ValueError, IndexError):
            return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        return 0

    def _run(self) -> None:
        while not self._stop.is_set():
            total = ceph = 0
            for pid in processes_of({self.uid}):
                r = self._rss(pid)
                total += r
                if os.path.basename((_cmdline(pid) or [""])[0]).startswith("ceph"):
                    ceph += r
            self.total, self.ceph = max(self.total, total), max(self.ceph, ceph)
            self._stop.wait(self.interval)

    def __enter__(self) -> "RssPeak":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def as_user(st: Student, argv: list[str], **kw) -> subprocess.CompletedProcess:
    env = ["env", "-i", f"HOME={st.home}", f"PATH={SYSTEM_PATH}", "LANG=C.UTF-8"]
    return subprocess.run([RUNUSER, "-u", st.name, "--", *env, *argv], capture_output=True, text=True,
                          cwd=st.home, timeout=120, **kw)


def run_lesson08(owner: Student, other: Student) -> Lesson08:
    """Lesson 08 in one session on the course's kernel, as a student runs it; before its last cell (which
    stops the cluster) the test looks at the cluster, and the other student tries to reach it."""
    cells = code_cells(owner.home / LESSON08)
    t0, started, runs = time.monotonic(), time.time(), []
    facts, daemons, others, listening = {}, [], {}, []
    with RssPeak(owner.uid) as peak, owner.kernel(LESSON08) as k:
        for src in [*cells[:-1], CLUSTER_FACTS]:
            runs.append(k.execute(src, timeout=300))
            if runs[-1].status != "ok":
                break
        else:
            facts = json.loads(runs[-1].text.strip().splitlines()[-1])
            if facts["live"]:
                d = facts["dir"]
                daemons = [(p, os.path.basename(_cmdline(p)[0]), _uid_of(p)) for p in _pids()
                           if any(d in a for a in _cmdline(p)[1:])]
                mine = _listening_uids()
                listening = sorted(a for a, uid in mine.items() if uid == owner.uid)
                mon = f"127.0.0.1:{facts['port']}"
                fake = other.home / "made-up.keyring"
                ceph = ["ceph", "--connect-timeout", "20", "-m", mon, "-s"]
                others = {
                    # the port itself is open to them: the monitor greets with its msgr2 banner
                    "reach the port": as_user(other, ["python3", "-c", BANNER, str(facts["port"])]),
                    "read keyring": as_user(other, ["cat", facts["keyring"]]),
                    "read conf": as_user(other, ["cat", facts["conf"]]),
                    **{f"enter mount {n}": as_user(other, ["ls", m]) for n, m in facts["mounts"].items()},
                    "ceph -s without a key": as_user(other, [*ceph, "-c", "/dev/null", "--id", "admin"]),
                    "make a key": as_user(other, ["ceph-authtool", "--create-keyring", str(fake), "--gen-key",
                                                  "-n", "client.admin"]),
                    "ceph -s with a made-up key": as_user(other, [*ceph, "-c", "/dev/null", "--id", "admin",
                                                                  "--keyring", str(fake)]),
                    # the control: the owner, with the cluster's key, on the same port
                    "owner ceph -s": as_user(owner, [*ceph, "-c", facts["conf"], "--id", "admin",
                                                     "--keyring", facts["keyring"], "--format", "json"]),
                }
                fake.unlink(missing_ok=True)
            runs.append(k.execute(cells[-1], timeout=300))
            if runs[-1].status == "ok":
                runs.append(k.execute(FACTS, timeout=120))
    return Lesson08(NotebookRun(owner.name, LESSON08, k.kernel_name, runs, time.monotonic() - t0, started),
                    facts, daemons, others, listening, peak.total, peak.ceph)


def facts_of(run: NotebookRun) -> dict:
    return json.loads(run.cells[-1].text.strip().splitlines()[-1])


def inside(path: str | Path, parent: Path) -> bool:
    p, d = os.path.realpath(path), os.path.realpath(parent)
    return p == d or p.startswith(d + os.sep)


@pytest.mark.timeout(1500)
@on_a_hub
def test_students_run_lessons_at_the_same_time(hub):
    students = hub.students
    together(lambda s: s.login(), students)
    spawn = together(lambda s: s.spawn(), students)
    print("spawn seconds:", ", ".join(f"{s:.1f}" for s in spawn))

    with Sampler(hub.uids) as sampler:
        all_runs = dict(zip([s.name for s in students], together(run_lessons, students)))
    for name, runs in all_runs.items():
        print(name, ", ".join(f"{Path(r.path).stem} {r.seconds:.1f} s" for r in runs))

    # every student's every lesson ran to the end, on the course's kernel
    failures = [r.failure() for runs in all_runs.values() for r in runs if not r.ok]
    assert failures == [], "\n\n".join(failures)
    for runs in all_runs.values():
        assert [r.path for r in runs] == [*LESSONS, "class-exercise.ipynb"]
        assert {r.kernel for r in runs} == {"iolab"}

    # each kernel ran as its student, in the class environment, with the spawner's and kernel.json's settings
    roots = []
    for st in students:
        for run in all_runs[st.name]:
            f = facts_of(run)
            assert f["uid"] == st.uid
            assert f["workdir"] == str(st.workdir)
            assert f["budget"] == hub.budget
            assert f["results"] == str(hub.results)             # from kernel.json
            assert f["python"].startswith(str(hub.env.venv)), f["python"]
            assert f["kernel"] == "iolab.kernel"                # the course's kernel: no debugger
            assert f["cwd"] == str(st.home / Path(run.path).parent)     # the notebook's directory
            assert inside(f["ws"], st.workdir), (f["ws"], st.workdir)
            assert (f["ws_owner"], f["ws_mode"], f["workdir_mode"]) == (st.uid, 0o700, 0o700)
            roots.append(f["ws"])
    assert len(set(roots)) == len(roots), "two kernels shared a workspace"

    # lesson 03 traced live and lesson 06 mounted live (where the tools are), for every student
    for runs in all_runs.values():
        by = {r.path: r for r in runs}
        if shutil.which("strace"):
            assert "LIVE" in by["notebooks/03-strace-syscalls.ipynb"].text
        # lesson 06's servers: in the student's own network where the node allows it, else it says so
        text06 = by["notebooks/06-fuse-object-storage.ipynb"].text
        assert "in a private network (owner only)" in text06 or "no private network for lesson 06" in text06
    print("lesson 06's servers:", "in private networks" if "(owner only)" in text06 else "on the node's loopback")
    mounted = {uid for _mp, _fs, uid in sampler.fuse}
    if shutil.which("s3fs"):
        assert mounted == {st.uid for st in students}, f"FUSE mounts seen: {sorted(sampler.fuse)}"

    # nobody's servers, mounts or caches in someone else's place, and nothing on a public address but
    # mpirun's own: Open MPI 4.1 binds its out-of-band listener to every interface whatever
    # oob_tcp_if_include says (the ranks' TCP transports are kept off by ~/.openmpi/mca-params.conf)
    public = sorted(x for x in sampler.listeners if x[1] not in ("127.0.0.1", "::1", "::ffff:127.0.0.1"))
    print("listening beyond loopback:", sorted({(x[1], x[3]) for x in public}))
    assert [x for x in public if x[3] not in ("mpirun", "orterun", "orted")] == [], \
        f"student processes listening beyond loopback: {public}"
    ports: dict[int, set[int]] = {}
    for uid, _ip, port, _cmd in sampler.listeners:
        ports.setdefault(port, set()).add(uid)
    print(f"{len(ports)} ports listened on by students; on the same port at different times: "
          f"{sorted(p for p, u in ports.items() if len(u) > 1)}")
    by_uid = {st.uid: st for st in students}
    for mountpoint, fstype, uid in sampler.fuse:
        assert inside(mountpoint, by_uid[uid].workdir), f"{fstype} of uid {uid} mounted at {mountpoint}"
    for uid, path, cmd in sampler.paths:
        if inside(path, hub.scratch):
            assert inside(path, by_uid[uid].workdir), f"{cmd} of uid {uid} uses {path}"

    # each student's results are in the class directory: their own file, their uid, mode 0644
    for st in students:
        saved = json.loads(all_runs[st.name][-1].cells[0].text.strip().splitlines()[-1])
        f = hub.results / f"{st.name}.json"
        assert saved["file"] == str(f)
        s = f.stat()
        assert (s.st_uid, stat.S_IMODE(s.st_mode)) == (st.uid, 0o644)
        assert json.loads(f.read_text())["user"] == st.name

    # the instructor's notebook loads them all
    ins = ready(hub.instructor)
    run = ins.run_notebook("notebooks/instructor/class-results.ipynb")
    assert run.ok, run.failure()
    assert f"{hub.results}: {len(students)} students" in run.text
    # which is all the instructor's role is for: it lists and reads the class's users, and cannot enter a
    # student's server (the hub's admin role could, and run code there as the student), nor make a
    # token for them, nor stop their server
    assert {s.name for s in students} <= {u["name"] for u in ins.hub_api("GET", "users")}
    r = ins.server_request("GET", "api/kernels", as_user=students[0].name)
    assert r.status_code == 403, (r.status_code, r.text[:200])
    ins.hub_api("POST", f"users/{students[0].name}/tokens", ok=(403,), json={"note": "instructor"})
    ins.hub_api("DELETE", f"users/{students[0].name}/server", ok=(403, 404))     # 404: "No access to resources"

    # nobody can read or delete another's workspace, or replace their results
    a, b = students[0], students[1]
    with a.kernel("probe.ipynb") as ka, b.kernel("probe.ipynb") as kb:
        held = ka.value("import json\nfrom iolab import workspace\nws = workspace.session()\n"
                        "p = ws.make_file('mine.bin', '1MiB')\nprint(json.dumps(str(p)))")
        probe = kb.value(PROBE.format(workdir=str(a.workdir), ws=str(Path(held).parent), file=held,
                                      results=str(hub.results / f"{a.name}.json")))
        assert probe == {"list workdir": "PermissionError", "list workspace": "PermissionError",
                         "read file": "PermissionError", "remove workspace": "PermissionError",
                         "remove results": "PermissionError", "replace results": "PermissionError"}, probe
        assert Path(held).exists()
    r = b.server_request("GET", "api/contents", as_user=a.name)
    assert r.status_code in (403, 404), (r.status_code, r.text[:200])

    # once the servers stop, nothing of theirs is left
    for st in [*students, ins]:
        st.stop_server()
    deadline = time.monotonic() + 20
    while any(hub.leftovers().values()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert hub.leftovers() == {"processes": [], "fuse mounts": [], "listening ports": [], "workspaces": [],
                               "files in /tmp etc.": []}


# what the second student runs while the first runs lesson 08
BESIDE_08 = ("notebooks/01-page-cache.ipynb", "notebooks/03-strace-syscalls.ipynb")


@pytest.mark.timeout(1200)
@on_a_hub
@pytest.mark.skipif(parallel_fs.why_not_live() not in ("", "IOLAB_MODE=replay"),
                    reason=f"lesson 08 cannot run live here: {parallel_fs.why_not_live()}")
def test_a_student_runs_lesson_08_live_beside_another_student(hub):
    """Lesson 08 on the hub (docs/jupyterhub.md's recommendation: one private Ceph cluster per student),
    run live by one student, as that student, while another runs other lessons; the other student
    cannot read its keys, enter its mounts or talk to its monitor; nothing of it is left once the
    servers stop. Its own test (its ~2.5 minutes under load are on top of the other lessons')."""
    a, b = ready(hub.students[0]), ready(hub.students[1])

    def lessons(st: Student) -> Lesson08 | list[NotebookRun]:
        if st is a:
            return run_lesson08(a, b)
        return [st.run_notebook(p, after=[FACTS]) for p in BESIDE_08]

    with Sampler(hub.uids) as sampler:
        l08, b_runs = together(lessons, [a, b])
    run = l08.run
    assert run.ok, run.failure()
    print(f"lesson 08 live on the hub as {a.name}: {run.seconds:.0f} s, peak resident memory of the student "
          f"{l08.peak_rss / 2**30:.2f} GiB (cluster and clients {l08.peak_ceph_rss / 2**30:.2f} GiB); "
          f"beside it {b.name} ran {', '.join(Path(r.path).stem for r in b_runs)}")
    print(run.cells[-2].text.strip())       # the lesson's last cell: the cluster described, stopped
    f = l08.facts
    # live, not replayed, as the student, in the student's workspace
    assert f["live"] is True and f["uid"] == a.uid, f
    assert "A private Ceph cluster is up in" in run.text
    assert set(f["modes"].values()) == {"live"}, f["modes"]
    assert inside(f["dir"], a.workdir) and all(inside(m, a.workdir) for m in f["mounts"].values()), f
    assert facts_of(run)["uid"] == a.uid
    # its daemons and clients ran as the student
    names = {cmd for _p, cmd, _u in l08.daemons}
    assert {"ceph-mon", "ceph-mgr", "ceph-mds", "ceph-osd", "ceph-fuse"} <= names, l08.daemons
    assert {u for _p, _c, u in l08.daemons} == {a.uid}, l08.daemons
    assert ("127.0.0.1", f["port"]) in l08.listening, l08.listening
    assert all(ip == "127.0.0.1" for ip, _port in l08.listening), l08.listening
    # the other student reaches none of it: the monitor's port answers the owner's key alone
    o = l08.others
    for what in ("read keyring", "read conf", *(f"enter mount {n}" for n in f["mounts"])):
        assert o[what].returncode != 0 and "Permission denied" in o[what].stderr, (what, o[what])
    assert o["reach the port"].stdout.strip() == repr(b"ceph v2\n"), o["reach the port"]    # so auth refuses them
    assert o["make a key"].returncode == 0, o["make a key"].stderr
    for what in ("ceph -s without a key", "ceph -s with a made-up key"):
        assert o[what].returncode != 0, (what, o[what].stdout[-500:])
        print(f"{b.name}: {what} on {a.name}'s monitor: exit {o[what].returncode}: "
              f"{o[what].stderr.strip().splitlines()[-1:] }")
    assert o["owner ceph -s"].returncode == 0, o["owner ceph -s"].stderr[-1000:]
    assert json.loads(o["owner ceph -s"].stdout)["fsid"]
    # the other student's lessons ran beside it, to the end, as that student
    assert [r.path for r in b_runs] == list(BESIDE_08), [r.failure() for r in b_runs]
    assert all(r.ok for r in b_runs), [r.failure() for r in b_runs]
    assert {facts_of(r)["uid"] for r in b_runs} == {b.uid}
    # the cluster's mounts were the student's, in the student's workspace, and nothing beyond loopback
    ceph_mounts = {(mp, uid) for mp, fs, uid in sampler.fuse if fs == "fuse.ceph-fuse"}
    assert {mp for mp, _ in ceph_mounts} >= set(f["mounts"].values()), sorted(sampler.fuse)
    assert all(uid == a.uid and inside(mp, a.workdir) for mp, uid in ceph_mounts), ceph_mounts
    assert [x for x in sampler.listeners if x[3].startswith("ceph")
            and x[1] not in ("127.0.0.1", "::1", "::ffff:127.0.0.1")] == []

    # once the servers stop, nothing of theirs is left: processes, mounts, listening ports, files
    for st in (a, b):
        st.stop_server()
    deadline = time.monotonic() + 30
    while any(hub.leftovers().values()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert hub.leftovers() == {"processes": [], "fuse mounts": [], "listening ports": [], "workspaces": [],
                               "files in /tmp etc.": []}
    assert not Path(f["dir"]).exists()
    assert [p for p, *_ in l08.daemons if Path(f"/proc/{p}").exists()] == []


PROBE = """\
import json, os, shutil
def attempt(f):
    try:
        f()
        return "done"
    except Exception as e:
        return type(e).__name__
tmp = os.path.join(os.environ["IOLAB_RESULTS"], f".probe-{{os.getpid()}}")
print(json.dumps({{
    "list workdir": attempt(lambda: os.listdir({workdir!r})),
    "list workspace": attempt(lambda: os.listdir({ws!r})),
    "read file": attempt(lambda: open({file!r}, "rb").read(1)),
    "remove workspace": attempt(lambda: shutil.rmtree({ws!r})),
    "remove results": attempt(lambda: os.remove({results!r})),
    "replace results": attempt(lambda: (open(tmp, "w").close(), os.replace(tmp, {results!r}))),
}}))
if os.path.exists(tmp):
    os.remove(tmp)
"""


# --- kernel traffic ---------------------------------------------------------------------------------

# run by the spy, a second student, with no key of anyone's: a ZMQ SUB socket (what a kernel's IOPub
# channel publishes to) on every TCP port the victim's uid listens on (/proc/net/tcp says whose each is)
# and every kernel unix socket under the victim's runtime directory (/proc/net/unix names them) or
# given; one JSON line for each connection event and each message, until stdin closes
EAVESDROP = r"""
import json, os, socket, sys, time
import zmq
from zmq.utils.monitor import recv_monitor_message

victim_uid, secret, runtime = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3]
NAMES = {getattr(zmq, n): n[6:] for n in dir(zmq) if n.startswith("EVENT_") and n != "EVENT_ALL"}
say = lambda **kw: print(json.dumps(kw), flush=True)
endpoints = []
for line in open("/proc/net/tcp").read().splitlines()[1:]:
    f = line.split()
    if f[3] == "0A" and int(f[7]) == victim_uid:
        addr, port = f[1].split(":")
        ip = socket.inet_ntop(socket.AF_INET, bytes.fromhex(addr)[::-1])
        endpoints.append(f"tcp://{'127.0.0.1' if ip == '0.0.0.0' else ip}:{int(port, 16)}")
for line in open("/proc/net/unix").read().splitlines()[1:]:
    f = line.split()
    if len(f) == 8 and f[3] == "00010000" and f[7].startswith(runtime + "/"):
        endpoints.append("ipc://" + f[7])
endpoints += ["ipc://" + p for p in sys.argv[4:] if "ipc://" + p not in endpoints]
ctx, poller, subs, monitors = zmq.Context(), zmq.Poller(), {}, {}
for ep in endpoints:
    s = ctx.socket(zmq.SUB)
    s.setsockopt(zmq.SUBSCRIBE, b"")
    s.setsockopt(zmq.HANDSHAKE_IVL, 3000)       # a peer that is not ZMQ fails the handshake in 3 s
    s.setsockopt(zmq.LINGER, 0)
    m = s.get_monitor_socket()
    s.connect(ep)
    subs[s], monitors[m] = ep, ep
    poller.register(s, zmq.POLLIN)
    poller.register(m, zmq.POLLIN)
poller.register(sys.stdin.fileno(), zmq.POLLIN)
say(endpoints=endpoints)
deadline = time.monotonic() + 300
while time.monotonic() < deadline:
    ready = dict(poller.poll(500))
    if sys.stdin.fileno() in ready and not os.read(sys.stdin.fileno(), 1024):
        break
    for sock, ep in subs.items():
        if sock in ready:
            frames = sock.recv_multipart()
            say(message=ep, secret=any(secret in fr for fr in frames))
    for mon, ep in monitors.items():
        if mon in ready:
            say(event=NAMES.get(recv_monitor_message(mon)["event"], "?"), endpoint=ep)
"""

# the victim's cell: prints a secret every 0.1 s, for at least 2 s and until the test says stop
SHOUT = """\
import os, time
for i in range(600):
    print({secret!r}, flush=True)
    if i >= 20 and os.path.exists({stop!r}):
        break
    time.sleep(0.1)
"""

# what a ZMQ connection attempt comes to: the handshake with a ZMQ peer, or a failure
SETTLED = {"HANDSHAKE_SUCCEEDED", "HANDSHAKE_FAILED_NO_DETAIL", "HANDSHAKE_FAILED_PROTOCOL",
           "HANDSHAKE_FAILED_AUTH", "CONNECT_RETRIED", "CLOSED", "DISCONNECTED"}


@dataclasses.dataclass
class Overheard:
    endpoints: list[str]
    events: dict[str, set[str]]        # endpoint -> the monitor events its connection had
    messages: dict[str, int]           # endpoint -> messages received
    secret: set[str]                   # endpoints a message with the secret came from
    cell: CellRun

    @property
    def handshaken(self) -> set[str]:
        return {ep for ep, ev in self.events.items() if "HANDSHAKE_SUCCEEDED" in ev}


def overhear(hub: HubClass, spy: Student, victim: Student, shout, paths: list[str] = ()) -> Overheard:
    """``spy`` (a real second unix user) subscribes to every kernel endpoint of ``victim`` it can find
    while ``shout(code)`` runs a cell in one of the victim's kernels that prints a secret. The cell ends
    once the spy has the secret, or every one of its connections failed with none handshaken (then
    nothing can arrive), or after a minute."""
    secret = "iolab-secret-" + secrets.token_hex(8)
    stop = hub.dir / f"stop-{secret}"
    argv = [RUNUSER, "-u", spy.name, "--", str(hub.env.python), "-c", EAVESDROP, str(victim.uid), secret,
            str(hub.runtime_dir(victim.name)), *paths]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd="/", env={"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"})
    lines: list[dict] = []

    def read():
        for line in proc.stdout:
            lines.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    cell: list[CellRun] = []
    try:
        deadline = time.monotonic() + 60
        while not (lines and "endpoints" in lines[0]):
            assert proc.poll() is None and time.monotonic() < deadline, f"the spy failed: {proc.stderr.read()}"
            time.sleep(0.1)
        endpoints = lines[0]["endpoints"]
        shouting = threading.Thread(target=lambda: cell.append(shout(SHOUT.format(secret=secret, stop=str(stop)))),
                                    daemon=True)
        shouting.start()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60:
            events = [x for x in lines if "event" in x]
            if any(x.get("secret") for x in lines):
                break
            settled = {x["endpoint"] for x in events if x["event"] in SETTLED}
            if settled >= set(endpoints) and not any(x["event"] == "HANDSHAKE_SUCCEEDED" for x in events):
                break
            time.sleep(0.2)
        stop.touch()
        shouting.join(timeout=120)
    finally:
        stop.touch()
        proc.stdin.close()
        proc.wait(timeout=60)
        reader.join(timeout=10)
        stop.unlink(missing_ok=True)
    assert cell, "the victim's cell did not end"
    events: dict[str, set[str]] = {ep: set() for ep in endpoints}
    messages = {ep: 0 for ep in endpoints}
    heard = set()
    for x in lines:
        if "event" in x:
            events[x["endpoint"]].add(x["event"])
        elif "message" in x:
            messages[x["message"]] += 1
            if x["secret"]:
                heard.add(x["message"])
    return Overheard(endpoints, events, messages, heard, cell[0])


RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
CONNECTION = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")

# the control: the same victim, in the same kernel, starts a kernel on TCP, as the hub's kernels were
TCP_KERNEL = """\
import json
from jupyter_client import KernelManager
control = KernelManager(kernel_name="iolab", transport="tcp")
control.start_kernel()
kc = control.client()
kc.start_channels()
kc.wait_for_ready(timeout=120)
print(json.dumps(control.transport))
"""


@pytest.mark.timeout(600)
@on_a_hub
def test_a_student_cannot_overhear_anothers_kernel(hub):
    """A kernel's IOPub channel publishes every cell's code and output to whoever subscribes; the key
    signs messages, it does not keep anyone from reading them. On TCP ports of 127.0.0.1 any user of
    the node could subscribe. The class's kernels are on unix sockets in the student's own runtime
    directory: the second student, trying every endpoint of the first, receives nothing; the same
    attack on a kernel the same student starts on TCP hears the secret."""
    victim, spy = ready(hub.students[0]), ready(hub.students[1])
    runtime = hub.runtime_dir(victim.name)
    with victim.kernel("victim.ipynb") as kv:
        # where jupyter_client put the kernel's sockets: files in the student's runtime directory, 0700
        info = json.loads((runtime / f"kernel-{kv.kernel_id}.json").read_text())
        assert info["transport"] == "ipc", info["transport"]
        assert info["ip"] == str(runtime / f"kernel-{kv.kernel_id}-ipc"), info["ip"]
        sockets = [f"{info['ip']}-{info[k]}" for k in CONNECTION]
        assert all(stat.S_ISSOCK(os.stat(p).st_mode) for p in sockets), sockets
        st, parent = os.stat(runtime), os.stat(hub.runtime_root)
        assert (st.st_uid, st.st_mode & 0o777) == (victim.uid, 0o700)
        assert (parent.st_uid, stat.S_IMODE(parent.st_mode) & 0o022) == (0, 0)
        # what the kernel still listens on over TCP: ipykernel's PULL socket for the output of forked
        # subprocesses (receive only, and only messages that start with a random key); the spy tries it
        kernel_pids = [p for p in processes_of({victim.uid}) if any(f"kernel-{kv.kernel_id}.json" in a
                                                                    for a in _cmdline(p))]
        assert kernel_pids, "the victim's kernel process was not found"
        listening = _listening()
        kernel_tcp = {f"tcp://{listening[i][0]}:{listening[i][1]}" for p in kernel_pids for i in _socket_inodes(p)
                      if i in listening}

        # (ipykernel warns when it starts on TCP; the class's kernels, every lesson's, did not)
        assert "Kernel is running over TCP without encryption" not in (hub.dir / "hub" / "hub.log").read_text()

        ipc = overhear(hub, spy, victim, lambda code: kv.execute(code), paths=sockets)
        assert ipc.cell.status == "ok" and ipc.cell.text.count("iolab-secret-") >= 20, ipc.cell.text[:300]
        assert {f"ipc://{p}" for p in sockets} | kernel_tcp <= set(ipc.endpoints), (ipc.endpoints, kernel_tcp)
        assert ipc.secret == set() and sum(ipc.messages.values()) == 0, ipc.messages
        assert ipc.handshaken == set(), ipc.events
        # the kernel's own sockets refused the spy before any byte (the directory is the victim's, 0700)
        assert all("CONNECTED" not in ipc.events[f"ipc://{p}"] for p in sockets), ipc.events
        print(f"\nthe spy tried {len(ipc.endpoints)} endpoints of the victim while the ipc kernel printed a secret "
              f"{ipc.cell.text.count('iolab-secret-')} times, 0 messages:")
        for ep in ipc.endpoints:
            print(f"  {ep}: {', '.join(sorted(ipc.events[ep]))}")

        # the control: the victim's own kernel starts one on TCP; the same spy hears the secret
        assert kv.value(TCP_KERNEL) == "tcp"
        try:
            tcp = overhear(hub, spy, victim, lambda code: kv.execute(
                f"kc.execute({code!r})\nprint(kc.get_shell_msg(timeout=120)['content']['status'])"))
        finally:
            kv.execute("kc.stop_channels()\ncontrol.shutdown_kernel(now=True)")
        print(f"the same spy on a TCP kernel: {len(tcp.handshaken)} of {len(tcp.endpoints)} endpoints "
              f"handshaken, the secret from {sorted(tcp.secret)}")
        assert tcp.cell.status == "ok" and "ok" in tcp.cell.text, tcp.cell.text[-300:]
        assert tcp.secret, f"the attack failed on a TCP kernel too: {tcp.events} {tcp.messages}"
        assert all(ep.startswith("tcp://127.0.0.1:") for ep in tcp.secret)


@pytest.mark.slow
def test_instructor_notebook_loads_a_small_class_with_no_outlier(tmp_path, monkeypatch):
    """A real class is small and alike: two students, one command, nobody flagged, no fio part. The
    instructor's notebook must still run to the end (the hub test found it failing on such a class)."""
    pytest.importorskip("nbclient")
    import nbformat

    from iolab import nbexec, recordings, results
    from iolab.tools import mdtest

    rec = recordings.load("mdtest/rates-tmp-4.0.0")
    frame = mdtest.to_frame(mdtest.parse(rec.text))
    d = tmp_path / "results"
    for user in ("alice", "bob"):
        results.save(frame, tool="mdtest", directory=d, user=user, path=tmp_path, filesystem="scratch",
                     options=["-n", "10", "-i", "3", "-y"], mode="replay", recording=rec.ref,
                     tool_version="4.0.0")
    monkeypatch.setenv("IOLAB_RESULTS", str(d))
    path = ROOT / "notebooks" / "instructor" / "class-results.ipynb"
    nb = nbformat.read(path, 4)
    nbexec.execute(nb, path.parent, timeout=120)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert f"{d}: 2 students" in text
    assert "0 of 0 flagged measurements" in text
    assert "no fio results in this directory" in text


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.timeout(600)
@on_a_hub
@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_a_student_runs_lesson_00_in_chromium_through_the_hub(hub, tmp_path):
    """The hub's login page, the spawn, JupyterLab behind the proxy, lesson 00 run to the end on the
    course's kernel, a chart drawn."""
    playwright = pytest.importorskip("playwright.sync_api")
    st = hub.students[0]
    args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    (tmp_path / "home").mkdir()
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=args,
                                    env={**os.environ, "HOME": str(tmp_path / "home")})
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{hub.url}/hub/login")
            page.fill("input[name=username]", st.name)
            page.fill("input[name=password]", st.password)
            page.click("input[type=submit], button[type=submit]")
            # the hub spawns the server and sends the browser on to JupyterLab behind the proxy
            page.wait_for_url(f"**/user/{st.name}/lab**", timeout=180_000)
            page.goto(f"{hub.url}/user/{st.name}/lab/tree/notebooks/00-start-here.ipynb?reset")
            page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=120_000)
            # the notebook names python3; the status bar shows the course's kernel, started and idle
            page.wait_for_function("document.body.innerText.includes('iolab (HPC storage I/O) | Idle')",
                                   timeout=120_000)
            # as a student does it: the Run menu, Run All Cells
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            page.wait_for_function(
                """() => {
                    const cells = [...document.querySelectorAll('.jp-CodeCell')];
                    return cells.length > 0 && cells.every(c => {
                        const p = c.querySelector('.jp-InputPrompt');
                        return /\\[\\d+\\]/.test(p ? p.textContent : '');
                    });
                }""", timeout=240_000, polling=1000)
            page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
            bars = page.locator(".js-plotly-plot .bars path").count()
            chart = page.locator(".js-plotly-plot").first
            chart.scroll_into_view_if_needed()
            chart.screenshot(path=str(tmp_path / "chart.png"))
            errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
            texts = [errors.nth(i).inner_text() for i in range(errors.count())]
        finally:
            with contextlib.suppress(Exception):
                page.screenshot(path=str(tmp_path / "lesson00-hub.png"), full_page=True)
            browser.close()
    assert bars >= 4, "the repeated-reads chart should draw a bar per read"
    assert (tmp_path / "chart.png").stat().st_size > 5_000
    assert not [t for t in texts if "Traceback" in t or "Error" in t], texts
    # the notebook says python3; the server gave it the course's kernel, the only one it offers
    if st.token is None:
        st.login()
    sessions = st.server_api("GET", "api/sessions")
    assert [s["kernel"]["name"] for s in sessions if s["path"].endswith("00-start-here.ipynb")] == ["iolab"]
    st.stop_server()


# the measuring student: lesson 01's cold read, and a warm read of a class data file others can read
MEASURER_SETUP = """\
import json, os
from iolab import measure, pagecache, workspace
ws = workspace.session()
data = ws.make_file("data.bin", "256MiB")
device = measure.device_rate(ws.root)
def cold_read():
    pagecache.evict(data)
    m = measure.timed_read(data, device_bps=device)
    print(m)
    return m
def report(m):
    w = m.witness
    return {"text": str(m), "label": m.verdict.label, "ground": m.verdict.ground, "mib_s": m.bytes_per_s / 2**20,
            "own_read": w.own_read if w else None, "disturbed": w.disturbed if w else None,
            "others_written": w.others_written if w else None, "nbytes": m.nbytes,
            "inferred": measure.judge(m.bytes_per_s, device_bps=device).label}
print(json.dumps({"device_mib_s": device / 2**20}))
"""

# the neighbour: writes on the same device, in a thread of their kernel, until told to stop
NEIGHBOUR_WRITES = """\
import os, threading
from iolab import workspace
ws = workspace.session()
ws.reserve("256MiB")
stop = threading.Event()
def write_back():
    block = os.urandom(4 << 20)
    while not stop.is_set():
        with open(ws.path("neighbour.bin"), "wb") as f:
            for _ in range(64):          # 256 MiB, 4 MiB at a time, each sent to the device at once
                f.write(block)
                f.flush()
                os.fsync(f.fileno())
writer = threading.Thread(target=write_back, daemon=True)
writer.start()
import time; time.sleep(1.0)     # the device is busy with the neighbour's write-back
print("{}")
"""

EVICT = """\
import json, os
fd = os.open({path!r}, os.O_RDONLY)              # read-only is enough to drop its pages for everyone
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)
print(json.dumps("evicted"))
"""


@pytest.mark.timeout(600)
@on_a_hub
def test_a_neighbour_disturbs_a_measurement_and_the_student_is_told(hub):
    """On one node students share the device and the page cache. A neighbour's write-back during a
    cold read, and a neighbour's posix_fadvise(DONTNEED) of a file both can read: what the measuring
    student's lesson-01 call prints says so, instead of a wrong verdict."""
    a, b = ready(hub.students[0]), ready(hub.students[1])
    shared = hub.shared / "class-data.bin"              # a class data set: root's, readable by all
    with open(shared, "wb") as f:
        f.write(os.urandom(128 << 20))
        os.fsync(f.fileno())
    os.chmod(shared, 0o644)
    with a.kernel("notebooks/01-page-cache.ipynb") as ka, b.kernel("neighbour.ipynb") as kb:
        device = ka.value(MEASURER_SETUP)["device_mib_s"]
        alone = ka.value("print(json.dumps(report(cold_read())))")
        kb.value(NEIGHBOUR_WRITES)
        try:
            during = ka.value("print(json.dumps(report(cold_read())))")
        finally:
            kb.execute("stop.set(); writer.join(); ws.remove('neighbour.bin')")
        # a file both can read: warm for the measurer, then the neighbour drops it
        ka.value(f"m = measure.timed_read({str(shared)!r}, device_bps=device)\nprint('{{}}')")
        for _ in range(5):         # another job's writes on the device (a second test run beside) disturb it
            warm = ka.value(f"print(json.dumps(report(measure.timed_read({str(shared)!r}, device_bps=device))))")
            if not warm["disturbed"]:
                break
        kb.value(EVICT.format(path=str(shared)))
        evicted = ka.value(f"print(json.dumps(report(measure.timed_read({str(shared)!r}, device_bps=device))))")
    print("\nwhat the student read, during the neighbour's write-back:\n  " + during["text"])
    print(f"device {device:,.0f} MiB/s uncached; lesson 01's cold read of 256 MiB alone "
          f"{alone['mib_s']:,.0f} MiB/s ({alone['label']}, disturbed={alone['disturbed']}), during a neighbour's "
          f"write-back {during['mib_s']:,.0f} MiB/s ({during['label']}, {during['others_written'] / 2**20:,.0f} MiB "
          f"written by others)\n  shared file warm {warm['mib_s']:,.0f} MiB/s ({warm['label']}), after the "
          f"neighbour's DONTNEED {evicted['mib_s']:,.0f} MiB/s ({evicted['label']}; the rate alone would say "
          f"{evicted['inferred']!r})")

    # write-back: the device moved bytes that were not the student's, and the student reads that
    assert during["disturbed"] is True
    assert during["others_written"] >= 4 << 20          # at least one of the neighbour's fsync'd blocks
    assert during["label"] == "unclear", during["text"]
    assert "DISTURBED" in during["text"]
    # the neighbour's eviction: the 'warm' read came from storage, and the verdict says so (the kernel
    # counted the student's own bytes), even though the student evicted nothing
    if warm["disturbed"]:                               # five times over: then it must say so
        assert warm["label"] == "unclear" and "DISTURBED" in warm["text"], warm["text"]
    else:
        assert warm["label"] == "served from page cache" and warm["ground"] == "witness", warm["text"]
    assert evicted["own_read"] >= 0.9 * evicted["nbytes"], evicted["text"]
    assert evicted["label"] in ("from the device", "unclear") and evicted["ground"] == "witness", evicted["text"]
    for st in (a, b):
        st.stop_server()
