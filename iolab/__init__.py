"""iolab: the helper package of a hands-on course on HPC storage I/O.

Every number a lesson shows comes through one path: run -> raw text -> parse -> DataFrame -> figure.
"""
from __future__ import annotations

from .errors import (BudgetExceeded, IolabError, OutsideWorkspace, ParseError, ToolFailed, ToolMissing,
                     ToolTimeout)
from .rendering import setup

__version__ = "0.1.0"

__all__ = ["BudgetExceeded", "IolabError", "OutsideWorkspace", "ParseError", "ToolFailed", "ToolMissing",
           "ToolTimeout", "setup", "__version__"]
