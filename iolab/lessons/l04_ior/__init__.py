"""Lesson 04 (IOR's pitfalls): notebooks/04-ior-pitfalls.ipynb and its exercise; its experiments, charts (plots.py) and checks (check.py)."""
