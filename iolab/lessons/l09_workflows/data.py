"""Lesson 09's data set, made here and the same every time: a random 1 Mb genome (one contig, chr1),
its bwa index and samtools .fai, and three samples of single-end reads simulated from it by wgsim
(read 1 of each pair only, as seed 004's pipeline maps them), with wgsim's list of the mutations it
put in (the truth the variant calls are checked against).

The objects go to the bucket in the seed's layout: ``data/genome.fa``, ``data/genome.fa.{amb,ann,bwt,
pac,sa,fai}``, ``data/samples/{A,B,C}.fastq``.
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path

from ... import runner
from ...errors import ToolMissing
from ... import workspace as _workspace

SAMPLES = ("A", "B", "C")
GENOME_BASES = 1_000_000
READS = 20_000
READ_LENGTH = 100
ERROR_RATE = 0.005
SEED = 4
INDEX_EXTS = (".amb", ".ann", ".bwt", ".pac", ".sa")
TOOLS = ("bwa", "samtools", "bcftools", "wgsim")
# what the data set takes on disk (genome 1.02 MB, index 1.75 MB, 3 x 4.85 MB of reads), with room
_SIZE = 24 * 1024 * 1024


@dataclass
class Dataset:
    """The files of the data set and what wgsim says it mutated."""

    root: Path
    files: dict[str, Path] = field(default_factory=dict)     # key in the bucket -> local file
    truth: dict[str, str] = field(default_factory=dict)       # sample -> wgsim's stdout (its mutations)
    seed: int = SEED
    reads: int = READS

    @property
    def nbytes(self) -> int:
        return sum(p.stat().st_size for p in self.files.values())

    def sizes(self) -> dict[str, int]:
        return {k: p.stat().st_size for k, p in self.files.items()}


def write_genome(path: Path, *, bases: int = GENOME_BASES, seed: int = SEED) -> Path:
    """One contig of random bases (random.Random(seed)), 60 to a line."""
    rnd = random.Random(seed)
    seq = "".join(rnd.choices("ACGT", k=bases))
    with open(path, "w") as f:
        f.write(">chr1\n")
        for i in range(0, bases, 60):
            f.write(seq[i:i + 60] + "\n")
    return path


def make(ws: _workspace.Workspace, name: str = "l09-data", *, reads: int = READS, seed: int = SEED,
         bases: int = GENOME_BASES) -> Dataset:
    """Make the data set in the workspace (ToolMissing when bwa, samtools or wgsim is missing)."""
    for tool in ("bwa", "samtools", "wgsim"):
        if runner.which(tool) is None:
            raise ToolMissing(tool, runner.install_hint(tool))
    ws.reserve(_SIZE * max(1, reads // READS) if reads > READS else _SIZE)
    root = ws.mkdir(name)
    samples = root / "samples"
    samples.mkdir(exist_ok=True)
    genome = write_genome(root / "genome.fa", bases=bases, seed=seed)
    runner.run(["bwa", "index", str(genome)], timeout=300)
    runner.run(["samtools", "faidx", str(genome)], timeout=120)
    ds = Dataset(root, seed=seed, reads=reads)
    ds.files["data/genome.fa"] = genome
    for ext in (*INDEX_EXTS, ".fai"):
        ds.files[f"data/genome.fa{ext}"] = Path(f"{genome}{ext}")
    for i, s in enumerate(SAMPLES):
        fq = samples / f"{s}.fastq"
        r = runner.run(["wgsim", "-S", str(seed + 1 + i), "-N", str(reads), "-1", str(READ_LENGTH),
                        "-2", str(READ_LENGTH), "-e", str(ERROR_RATE), str(genome), str(fq), os.devnull],
                       timeout=300)
        ds.truth[s] = r.stdout
        (samples / f"{s}.truth.txt").write_text(r.stdout)
        ds.files[f"data/samples/{s}.fastq"] = fq
    return ds


def upload(ds: Dataset, client, bucket: str) -> int:
    """Put every file of the data set into the bucket (a boto3 client); the bytes put."""
    n = 0
    for key, path in sorted(ds.files.items()):
        client.upload_file(str(path), bucket, key)
        n += path.stat().st_size
    return n
