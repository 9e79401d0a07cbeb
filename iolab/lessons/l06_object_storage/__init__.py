"""Lesson 06 (FUSE and object storage): notebooks/06-fuse-object-storage.ipynb and its exercise; its experiments, charts (plots.py) and checks (check.py)."""
