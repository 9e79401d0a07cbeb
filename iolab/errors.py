"""The errors iolab raises. Each one says what went wrong and what to do about it."""
from __future__ import annotations

from collections.abc import Sequence


class IolabError(Exception):
    """Base class of every error raised by iolab."""


class ParseError(IolabError, ValueError):
    """A tool's output did not have the shape the parser expects."""

    def __init__(self, message: str, line_no: int | None = None, line: str | None = None):
        self.line_no = line_no
        self.line = line
        where = ""
        if line_no is not None:
            where = f" (line {line_no}"
            where += f": {line.strip()[:120]!r})" if line is not None else ")"
        super().__init__(f"{message}{where}")


class ToolMissing(IolabError, FileNotFoundError):
    """An external program the experiment needs is not installed."""

    def __init__(self, tool: str, hint: str):
        self.tool = tool
        self.hint = hint
        super().__init__(f"{tool} is not installed or not on PATH. {hint}")


class ToolFailed(IolabError, RuntimeError):
    """An external program ran and failed."""

    def __init__(self, argv: Sequence[str], returncode: int | None, stderr: str, message: str = ""):
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        tail = "\n".join(stderr.strip().splitlines()[-15:])
        head = message or f"{self.argv[0]} exited with status {returncode}"
        super().__init__(f"{head}\n  command: {' '.join(map(str, self.argv))}"
                         + (f"\n  stderr (last lines):\n{tail}" if tail else ""))


class ToolTimeout(ToolFailed):
    """An external program ran past its time limit and was killed with its process group."""


class BudgetExceeded(IolabError, OSError):
    """A write would take the workspace past its byte budget (or the filesystem past full)."""


class OutsideWorkspace(IolabError, ValueError):
    """A path resolves to a place outside the workspace."""


class BadValue(IolabError, ValueError, TypeError):
    """A value given to iolab (a trial's number, a factor, a setting's name) is not one it can use: the
    message names the value and what was expected. A ValueError and a TypeError as well, so that code
    catching either of those catches it."""
