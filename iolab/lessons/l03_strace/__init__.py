"""Lesson 03 (strace: the system calls): notebooks/03-strace-syscalls.ipynb and its exercise; its experiments, charts (plots.py) and checks (check.py)."""
