"""Lesson 09's experiments, each live (with a :class:`~.lab.Lab`) or replayed from its recording,
each an Outcome with typed fields computed the same way from the run's record either way.

    before(lab)                     seed 004's "before": stage all to scratch, three chained jobs, copy back
    dry_run(lab), dag(lab)          snakemake -n; snakemake --dag (Graphviz dot text)
    workflow(lab, cores=1)          the Snakemake workflow over S3 (-c 1, -c 3)
    resume(lab, sig="KILL")         killed in the middle, then the re-runs it takes
"""
from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ... import recordings, safeio
from ...errors import ParseError
from ...runner import tool_version, which
from ...tools import seaweedfs
from ...tools import snakemake as smk
from . import lab as _lab
from .lab import SNAKEFILE, Lab
from .runs import Recorder, Step, call

DIR = "workflows"
TOOLS = ("snakemake", "bwa", "samtools", "bcftools", "wgsim")
MiB = 1024 * 1024


def _unavailable(lab: Lab | None):
    return lambda: None if lab is not None else "no store was started here (lab is None)"


# --- the records, read the same live and replayed ------------------------------------------------------

def _read(rec: recordings.Recording) -> dict[str, Any]:
    doc = safeio.loads(rec.text)
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        raise ParseError(f"{rec.path}: not a lesson 09 run record (no steps)")
    return doc


def _door(live, recording: str, lab: Lab | None, cls, save_as: str | None, notes: str):
    def run_live():
        doc = live()
        if save_as:
            recordings.save(json.dumps(doc, indent=1) + "\n", f"{DIR}/{save_as}", ext="json",
                            argv=doc["steps"][0]["argv"] if doc["steps"] else [], tool_version=doc.get("versions") or _versions(),
                            fs_path=lab.ws.root, stream="file",
                            notes=f"{notes}; load {_load(doc)} (1-minute average, before -> after)")
        return cls("live", json.dumps(doc), f"LIVE run here ({doc['host']}, {doc['started']}, load "
                   f"{_load(doc)}): {notes}", data=doc)
    out = recordings.live_or_recorded(run_live, f"{DIR}/{recording}", requires=(), unavailable=_unavailable(lab),
                                      read=_read, cls=cls)
    out.analyse()
    return out


def _versions() -> str:
    parts = []
    for t in ("snakemake", "bwa", "samtools", "bcftools"):
        v = _version(t)
        if v:
            parts.append(f"{t} {v}")
    return "; ".join(parts)


def _version(tool: str) -> str:
    if tool == "snakemake":
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version("snakemake")
        except PackageNotFoundError:
            return ""
    if which(tool) is None:
        return ""
    if tool == "bwa":
        import subprocess
        r = subprocess.run(["bwa"], capture_output=True, text=True)
        for line in r.stderr.splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
        return ""
    return (tool_version(tool) or "").split("\n")[0].split(" ")[-1]


def _load(doc: dict) -> str:
    a, b = doc.get("load_before") or [None], doc.get("load_after") or [None]
    return f"{a[0]}->{b[0]}" if a[0] is not None else "unknown"


def _counters(text: str) -> seaweedfs.S3Counters:
    return seaweedfs.counters(seaweedfs.parse(text))


@dataclass
class Moved:
    """What one step or run did at the store, from its own counters: after minus before."""

    sent: int                  # payload bytes the store sent (objects fetched)
    received: int              # bytes it took in (uploads)
    gets: int                  # GETs that sent an object
    heads: int                 # type-GET requests that sent none (HEADs: SeaweedFS counts them as GET)
    puts: int
    lists: int
    requests: int              # all of them

    @classmethod
    def of(cls, c: seaweedfs.S3Counters, bucket: str) -> "Moved":
        return cls(c.bytes_sent(bucket), c.bytes_received(bucket), c.gets_with_body(bucket), c.heads(bucket),
                   c.count("PUT", bucket=bucket), c.count("LIST", bucket=bucket), c.count(bucket=bucket))


@dataclass
class Record(recordings.Outcome):
    """A run's record (``data``) and what it shows, computed from it live and replayed alike."""

    steps: pd.DataFrame | None = None           # one row per step: label, returncode, seconds, bytes, requests
    moved: Moved | None = None                  # the whole record's traffic at the store
    peak: int = 0                               # the scratch directory's high-water mark (bytes)
    peak_local: int = 0                         # the local storage prefix's (Snakemake's copies)
    left: dict[str, int] = field(default_factory=dict)   # what is in scratch afterwards
    samples: pd.DataFrame | None = None         # t, scratch bytes, local-copy bytes
    load: str = ""

    def analyse(self) -> None:
        doc = self.data
        bucket = doc["bucket"]
        before = _counters(doc["metrics_before"])
        rows, prev = [], before
        for s in doc["steps"]:
            now = _counters(s["metrics"])
            m = Moved.of(now.minus(prev), bucket)
            rows.append({"label": s["label"], "returncode": s["returncode"], "seconds": s["seconds"],
                         "signal": s.get("signal"), **m.__dict__})
            prev = now
        self.steps = pd.DataFrame(rows)
        self.moved = Moved.of(prev.minus(before), bucket)
        cols = ["t", "scratch"] + (["local"] if doc["samples"] and len(doc["samples"][0]) > 2 else [])
        self.samples = pd.DataFrame(doc["samples"], columns=cols)
        self.peak = int(self.samples["scratch"].max()) if len(self.samples) else 0
        self.peak_local = int(self.samples["local"].max()) if "local" in self.samples else 0
        self.left = dict(doc.get("left") or {})
        self.load = _load(doc)
        self.frame = self.steps

    @property
    def left_bytes(self) -> int:
        return sum(self.left.values())

    @property
    def seconds(self) -> float:
        return float(self.steps["seconds"].sum()) if self.steps is not None else 0.0


def recorded(name: str) -> Record:
    """A recording of this lesson as it was made (``before``, ``snakemake-c1``, ``resume-kill``...),
    whatever runs here: what an exercise is graded on."""
    rec = recordings.load(f"{DIR}/{name}")
    doc = _read(rec)
    cls = {"before": Record, "partial": Partial}.get(doc.get("kind"), Workflow)
    out = cls("replay", rec.text, rec.provenance, recording=rec, data=doc)
    out.analyse()
    return out


# --- 1. the seed's "before" ----------------------------------------------------------------------------

def _job_scripts(scratch: Path, bucket: str) -> dict[str, str]:
    """The seed's three batch scripts, written for bash (a Slurm array index is the sample here)."""
    q = shlex.quote
    d = q(str(scratch))
    head = "#!/bin/bash\nset -euo pipefail\n"
    sample = 'S=${1:?sample}\n'
    return {
        "job1.sh": head + sample + f"cd {d}\nmkdir -p mapped sorted\n"
                   "bwa mem data/genome.fa data/samples/$S.fastq 2> mapped/$S.log | samtools view -b - > mapped/$S.bam\n"
                   "samtools sort -T sorted/$S -O bam mapped/$S.bam > sorted/$S.bam\n",
        "job2.sh": head + sample + f"cd {d}\nsamtools index sorted/$S.bam\n",
        "job3.sh": head + f"cd {d}\nmkdir -p results\n"
                   "(bcftools mpileup -f data/genome.fa sorted/A.bam sorted/B.bam sorted/C.bam | bcftools call -mv -) "
                   "> results/all.vcf 2> results/call.log\n",
    }


def before(lab: Lab | None, *, recording: str = "before", save_as: str | None = None) -> Record:
    """Seed 004's "before": copy every input from the bucket to scratch (s3cmd, as a user would on a
    login node), run three jobs one after the other, each only if the one before succeeded (the
    seed's sbatch --dependency=afterok chain; here local processes: no Slurm in this lesson), copy
    the result back; scratch is left as it is, as the seed's users leave it."""
    def live() -> dict:
        assert lab is not None
        scratch = Path(lab.ws.mkdir(f"l09-before-{_n()}"))
        _fresh(lab)
        cfgdir = Path(lab.ws.mkdir(f"l09-s3cmd-{_n()}"))
        cfg = lab.ep.s3cmd_config(cfgdir)
        lab.ws.reserve(3 * sum(lab.objects.values()))
        scripts = _job_scripts(scratch, lab.bucket)
        for name, text in scripts.items():
            (cfgdir / name).write_text(text)
        s3cmd = ["s3cmd", "-c", str(cfg), "--no-progress", "--no-mime-magic"]
        (scratch / "data").mkdir()
        with Recorder(lab, "before", scratch) as rec:
            rec.step(Step("stage in (s3cmd get -r)", [*s3cmd, "get", "-r", f"s3://{lab.bucket}/data/",
                                                       str(scratch / "data") + "/"], scratch, {}),
                     timeout=300).check("copying the inputs to scratch")
            for job, samples in (("job1.sh", "ABC"), ("job2.sh", "ABC"), ("job3.sh", "-")):
                # a job array: its tasks one after the other on 2 cores; the next job only after all succeeded
                for s in samples:
                    argv = ["bash", str(cfgdir / job)] + ([s] if s != "-" else [])
                    rec.step(Step(f"{job[:4]}{'' if s == '-' else '[' + s + ']'}", argv, scratch, {}),
                             timeout=300).check(f"{job} ({s})")
            rec.step(Step("copy back (s3cmd put)", [*s3cmd, "put", str(scratch / "results" / "all.vcf"),
                                                     f"s3://{lab.bucket}/results/before/all.vcf"], scratch, {}),
                     timeout=120).check("copying the result back")
        rec.doc["vcf"] = (scratch / "results" / "all.vcf").read_text()
        rec.doc["truth"] = dict(lab.data.truth)
        shutil.rmtree(cfgdir)                      # the keys' file: nothing of the keys is kept
        return rec.doc
    return _door(live, recording, lab, Record, save_as,
                 "seed 004's before: stage all with s3cmd, three jobs chained on success, copy back")


_COUNT = [0]


def _n() -> int:
    _COUNT[0] += 1
    return _COUNT[0]


# --- 2. the workflow -------------------------------------------------------------------------------------

def _snakemake(lab: Lab, workdir: Path, *args: str) -> list[str]:
    return [*_lab.snakemake_exe(), "-s", str(SNAKEFILE), "--config", f"bucket={lab.bucket}",
            "--local-storage-prefix", str(workdir / "local-storage"), *args]


@dataclass
class Workflow(Record):
    """A Snakemake run (or several: a resume) over S3: its jobs, what each fetched, what it removed."""

    events: pd.DataFrame | None = None          # parse_log's rows of every step, with the step's label
    jobs: pd.DataFrame | None = None            # per job: step, rule, jobid, sample, objects fetched, bytes
    planned: dict[str, int] = field(default_factory=dict)   # Job stats of the first step
    cores: int = 0

    def analyse(self) -> None:
        super().analyse()
        doc = self.data
        self.cores = int(doc.get("cores") or 0)
        sizes = {f"s3://{doc['bucket']}/{k}": v for k, v in doc["objects"].items()}
        ev, jobs = [], []
        for s in doc["steps"]:
            log = _log(s)
            rows = smk.parse_log(log) if log.strip() else []
            fetched: list[str] = []
            for r in rows:
                ev.append({"step": s["label"], **r})
                if r["event"] == "retrieve":
                    fetched.append(r["url"])
                elif r["event"] == "start":
                    jobs.append({"step": s["label"], "rule": r["rule"], "jobid": r["jobid"],
                                 "sample": _sample(r["wildcards"]), "objects": len(fetched),
                                 "bytes": sum(sizes.get(u, 0) for u in fetched), "fetched": list(fetched)})
                    fetched = []
        self.events = pd.DataFrame(ev)
        self.jobs = pd.DataFrame(jobs, columns=["step", "rule", "jobid", "sample", "objects", "bytes", "fetched"])
        first = next((s for s in doc["steps"] if "Job stats:" in _log(s)), None)
        self.planned = smk.job_stats(_log(first)) if first else {}

    def count(self, event: str, step: str | None = None) -> int:
        if self.events is None or not len(self.events):
            return 0
        e = self.events[self.events["event"] == event]
        return int(len(e if step is None else e[e["step"] == step]))

    def fetched_bytes(self, step: str | None = None) -> int:
        j = self.jobs if step is None else self.jobs[self.jobs["step"] == step]
        return int(j["bytes"].sum())


def _log(step: dict) -> str:
    """Snakemake's log of a step: its stderr, or its stdout where a dry run (-n) printed it there."""
    if "Building DAG of jobs..." not in step["stderr"] and "Building DAG of jobs..." in step["stdout"]:
        return step["stdout"]
    return step["stderr"]


def _sample(wildcards: str | None) -> str | None:
    if not wildcards:
        return None
    for part in wildcards.split(","):
        k, _, v = part.strip().partition("=")
        if k == "sample":
            return v
    return None


def workflow(lab: Lab | None, *, cores: int = 1, recording: str | None = None,
             save_as: str | None = None) -> Workflow:
    """The Snakemake workflow over S3 with ``-c cores``, from an empty scratch directory to all.vcf in
    the bucket; scratch and the local storage prefix sampled every 0.2 s."""
    def live() -> dict:
        assert lab is not None
        wd = Path(lab.ws.mkdir(f"l09-c{cores}-{_n()}"))
        _fresh(lab)
        lab.ws.reserve(4 * sum(lab.objects.values()))
        with Recorder(lab, "workflow", wd, wd / "local-storage", cores=cores) as rec:
            rec.step(Step(f"snakemake -c {cores}", _snakemake(lab, wd, "-c", str(cores)), wd, lab.env(wd)),
                     timeout=600).check(f"snakemake -c {cores}")
        rec.doc["vcf"] = _get_text(lab, "results/all.vcf")
        rec.doc["truth"] = dict(lab.data.truth)
        return rec.doc
    return _door(live, recording or f"snakemake-c{cores}", lab, Workflow, save_as,
                 f"snakemake -c {cores}: seed 004's pipeline over S3 (SeaweedFS), 3 samples of 20,000 reads")


def _fresh(lab: Lab) -> None:
    """No result in the bucket yet: each run starts where the seed's user starts (the inputs only)."""
    cl = lab.client()
    for key in _lab.listing(cl, lab.bucket, "results/"):
        cl.delete_object(Bucket=lab.bucket, Key=key)


def _get_text(lab: Lab, key: str) -> str:
    return lab.client().get_object(Bucket=lab.bucket, Key=key)["Body"].read().decode()


def dry_run(lab: Lab | None, *, recording: str = "dry-run", save_as: str | None = None) -> Workflow:
    """``snakemake -n``: the jobs it would run, nothing run, nothing fetched."""
    def live() -> dict:
        assert lab is not None
        wd = Path(lab.ws.mkdir(f"l09-n-{_n()}"))
        _fresh(lab)
        with Recorder(lab, "dry-run", wd) as rec:
            rec.step(Step("snakemake -n", _snakemake(lab, wd, "-n"), wd, lab.env(wd)), timeout=300).check("snakemake -n")
        return rec.doc
    return _door(live, recording, lab, Workflow, save_as, "snakemake -n")


def dag(lab: Lab | None, *, recording: str = "dag", save_as: str | None = None) -> Workflow:
    """``snakemake --dag``: the jobs and their dependencies as Graphviz dot text (the step's stdout)."""
    def live() -> dict:
        assert lab is not None
        wd = Path(lab.ws.mkdir(f"l09-dag-{_n()}"))
        _fresh(lab)
        with Recorder(lab, "dag", wd) as rec:
            rec.step(Step("snakemake --dag", _snakemake(lab, wd, "--dag"), wd, lab.env(wd)), timeout=300) \
                .check("snakemake --dag")
        return rec.doc
    return _door(live, recording, lab, Workflow, save_as, "snakemake --dag")


# --- 3. kill and resume --------------------------------------------------------------------------------

def _kill_at(rule: str, nth: int, sig: str):
    def when(lines: list[str]) -> str | None:
        n = sum(1 for ln in lines if ln.rstrip("\n") in (f"localrule {rule}:", f"rule {rule}:"))
        return sig if n >= nth else None
    return when


def resume(lab: Lab | None, *, sig: str = "KILL", recording: str | None = None,
           save_as: str | None = None) -> Workflow:
    """``snakemake -c 1`` sent SIG``sig`` (KILL: the kernel killed; INT: Ctrl-C, Jupyter's interrupt)
    just after its third map_reads job starts; then what it takes to finish: a plain re-run, then
    ``--rerun-incomplete``, ``--unlock`` and ``--rerun-incomplete`` again, each only if the one before
    did not finish the workflow."""
    if sig not in ("KILL", "INT"):
        raise ValueError("sig is KILL or INT")

    def live() -> dict:
        assert lab is not None
        wd = Path(lab.ws.mkdir(f"l09-resume-{sig.lower()}-{_n()}"))
        _fresh(lab)
        lab.ws.reserve(4 * sum(lab.objects.values()))
        env = lab.env(wd)
        with Recorder(lab, "resume", wd, wd / "local-storage", cores=1, sig=sig) as rec:
            first = rec.step(Step(f"snakemake -c 1, SIG{sig} during map_reads", _snakemake(lab, wd, "-c", "1"), wd, env),
                             timeout=600, kill_when=_kill_at("map_reads", 3, sig))
            if first.signal is None:
                raise ParseError("the run ended before its third map_reads job: nothing was interrupted")
            rec.doc["after_kill"] = _lab.contents(wd)
            tries = [("plain re-run", ["-c", "1"]), ("--rerun-incomplete", ["-c", "1", "--rerun-incomplete"]),
                     ("--unlock", ["--unlock"]), ("--rerun-incomplete again", ["-c", "1", "--rerun-incomplete"])]
            done = False
            for label, args in tries:
                if done:
                    break
                s = rec.step(Step(label, _snakemake(lab, wd, *args), wd, env), timeout=600)
                done = s.returncode == 0 and args != ["--unlock"]
            if not done:
                raise ParseError("the workflow did not finish after --unlock and --rerun-incomplete")
        rec.doc["vcf"] = _get_text(lab, "results/all.vcf")
        rec.doc["truth"] = dict(lab.data.truth)
        return rec.doc
    return _door(live, recording or f"resume-{sig.lower()}", lab, Workflow, save_as,
                 f"snakemake -c 1 sent SIG{sig} after its third map_reads job started, then re-run until done")


# --- 4. the result checked ------------------------------------------------------------------------------

@dataclass
class Calls:
    """The variant calls against wgsim's mutations (positions on chr1)."""

    calls: int
    true_positions: int            # distinct positions wgsim mutated in any sample
    called_true: int               # calls at one of them
    false_calls: int               # calls elsewhere

    @property
    def recall(self) -> float:
        return self.called_true / self.true_positions if self.true_positions else 0.0


def vcf_positions(text: str) -> list[int]:
    """The POS of each record of a VCF (header lines skipped); ParseError naming a line that is not one."""
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t", 2)
        if len(parts) < 3 or not parts[1].isdigit():
            raise ParseError("not a VCF record (CHROM POS ...)", line_no=no, line=line[:200])
        out.append(int(parts[1]))
    return out


def truth_positions(text: str) -> set[int]:
    """The positions wgsim printed as mutated (its stdout: chrom, pos, ref, alt, strand)."""
    out = set()
    for no, line in enumerate(text.splitlines(), 1):
        parts = line.split("\t")
        if len(parts) < 4 or not parts[1].isdigit():
            raise ParseError("not a line of wgsim's mutation list", line_no=no, line=line[:200])
        out.add(int(parts[1]))
    return out


def calls_against_truth(run: Record) -> Calls:
    called = vcf_positions(run.data["vcf"])
    truth: set[int] = set()
    for t in run.data["truth"].values():
        truth |= truth_positions(t)
    hit = sum(1 for p in called if p in truth)
    return Calls(len(called), len(truth), len(set(called) & truth), len(called) - hit)


# --- 5. staging against streaming, for a job that reads only the start of its input -----------------------

PART_READS = 1000                 # the job needs the first 1,000 reads of a sample (4,000 FASTQ lines)
PART_KEY = "data/samples/A.fastq"
SMALL_BLOCK = 64 * 1024           # an fsspec block size chosen for a partial read
READ_CHUNK = 8192                 # the job's own read size


def first_reads(f, n: int, chunk: int = READ_CHUNK) -> tuple[int, int]:
    """Read ``f`` in ``chunk``-byte reads until ``n`` FASTQ records (4n lines) are in: (the bytes the
    reader read, the bytes of the n records). ParseError when the object holds fewer."""
    got = lines = 0
    while True:
        b = f.read(chunk)
        if not b:
            raise ParseError(f"fewer than {n} FASTQ records ({lines} lines) in the object")
        k = b.count(b"\n")
        if lines + k >= 4 * n:
            idx = -1
            for _ in range(4 * n - lines):
                idx = b.index(b"\n", idx + 1)
            return got + len(b), got + idx + 1
        lines += k
        got += len(b)


@dataclass
class Partial(Record):
    """Staging against streaming: per way (``ways``, one row per step), the bytes the reader read, the
    bytes the store sent, its GETs and HEADs, the block size, the scratch peak."""

    ways: pd.DataFrame | None = None

    def analyse(self) -> None:
        super().analyse()
        assert self.steps is not None
        facts = [safeio.loads(s["stdout"]) for s in self.data["steps"]]
        self.ways = pd.concat([self.steps[["label", "sent", "gets", "heads", "requests", "seconds"]],
                               pd.DataFrame(facts)], axis=1).set_index("label")

    def way(self, kind: str) -> pd.Series:
        """The row of 'stage', 'default block' or 'small block'."""
        assert self.ways is not None
        rows = self.ways[self.ways["way"] == kind]
        if len(rows) != 1:
            raise ParseError(f"the record has {len(rows)} steps of kind {kind!r}")
        return rows.iloc[0]


def _s3fs(lab: Lab):
    import s3fs

    return s3fs.S3FileSystem(key=lab.ep.access_key, secret=lab.ep.secret_key, endpoint_url=lab.ep.url,
                             client_kwargs={"region_name": lab.ep.region}, skip_instance_cache=True,
                             use_listings_cache=False, config_kwargs={"s3": {"addressing_style": "path"}})


def partial(lab: Lab | None, *, reads: int = PART_READS, recording: str = "partial-read",
            save_as: str | None = None) -> Partial:
    """A job that needs only the first ``reads`` reads of sample A, three ways: (a) copy the whole
    object to scratch (boto3 ``download_file``), read the part, remove the copy; (b) read it straight
    from the store with s3fs at its default block size; (c) the same with ``block_size=64 KiB``."""
    def live() -> dict:
        assert lab is not None
        import s3fs

        scratch = Path(lab.ws.mkdir(f"l09-partial-{_n()}"))
        size = lab.objects[PART_KEY]
        lab.ws.reserve(size)
        cl = lab.client()

        def stage() -> dict:
            local = scratch / "A.fastq"
            cl.download_file(lab.bucket, PART_KEY, str(local))
            peak = _lab.tree_bytes(scratch)
            rec.sampler.sample()                  # the copy's moment on scratch, in the record's samples too
            with open(local, "rb") as f:
                got, records = first_reads(f, reads)
            local.unlink()
            return {"way": "stage", "object": size, "read": got, "records": records, "block_size": None,
                    "client_fetched": size, "scratch_peak": peak, "left": _lab.tree_bytes(scratch)}

        def stream(block: int | None) -> dict:
            fs = _s3fs(lab)
            with fs.open(f"{lab.bucket}/{PART_KEY}", "rb", **({"block_size": block} if block else {})) as f:
                got, records = first_reads(f, reads)
                bs, fetched = f.blocksize, f.cache.total_requested_bytes
            return {"way": "default block" if block is None else "small block", "object": size, "read": got,
                    "records": records, "block_size": bs, "client_fetched": fetched,
                    "scratch_peak": _lab.tree_bytes(scratch), "left": _lab.tree_bytes(scratch)}

        import boto3
        import fsspec

        versions = f"s3fs {s3fs.__version__}; fsspec {fsspec.__version__}; boto3 {boto3.__version__}"
        with Recorder(lab, "partial", scratch, reads=reads, key=PART_KEY, versions=versions) as rec:
            call(rec, "stage: copy to scratch, read the part", ["boto3", "download_file", PART_KEY], stage)
            call(rec, "stream: s3fs, default block size", ["s3fs", "open", PART_KEY], lambda: stream(None))
            call(rec, "stream: s3fs, block_size=64 KiB", ["s3fs", "open", PART_KEY, f"block_size={SMALL_BLOCK}"],
                 lambda: stream(SMALL_BLOCK))
        shutil.rmtree(scratch)
        return rec.doc
    return _door(live, recording, lab, Partial, save_as,
                 f"the first {reads:,} reads of {PART_KEY}: staged to scratch, and streamed with s3fs")
