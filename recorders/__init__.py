"""The scripts that re-make the course's recordings (raw tool output + .meta.json under data/recorded/).

Run each from the project root as a module, e.g. ``.venv/bin/python -m recorders.l01_dd``; each module's
docstring says what it needs (tools, root) and what it writes. The Slurm and class recordings
run on the private Slurm of ``iolab.slurm_cluster``.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "data" / "recorded"
