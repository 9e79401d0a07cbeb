"""One module per tool: argv builders, run(), parse(text) -> list[dict], to_frame()."""
from __future__ import annotations

import re
from pathlib import Path


def first_line(pattern: re.Pattern[str], *texts: str) -> str | None:
    """The first line (stripped) of any of texts that matches pattern, or None: a tool's own error line."""
    for text in texts:
        for line in (text or "").splitlines():
            if pattern.search(line.strip()):
                return line.strip()
    return None


def banner_version(tool: str) -> str | None:
    """IOR's or mdtest's version ("4.0.0") from the banner of a run that does no I/O; None when the
    tool is not on PATH or printed no banner. They have no version flag: they refuse ``--version``
    and exit without MPI_Finalize, which leaves Open MPI's session directory in /tmp."""
    from . import ior, mdtest

    probe = {"ior": ior.installed_version, "mdtest": mdtest.installed_version}[Path(tool).name]
    return probe(tool)
