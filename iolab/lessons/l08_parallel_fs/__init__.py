"""Lesson 08 (a parallel file system): notebooks/08-parallel-fs.ipynb and its exercise; its experiments, charts (plots.py) and checks (check.py)."""
