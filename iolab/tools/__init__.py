"""One module per tool: argv builders, run(), parse(text) -> list[dict], to_frame()."""
from __future__ import annotations

import re


def first_line(pattern: re.Pattern[str], *texts: str) -> str | None:
    """The first line (stripped) of any of texts that matches pattern, or None: a tool's own error line."""
    for text in texts:
        for line in (text or "").splitlines():
            if pattern.search(line.strip()):
                return line.strip()
    return None
