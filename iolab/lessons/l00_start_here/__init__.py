"""Lesson 00 (start here): notebooks/00-start-here.ipynb and its exercise; its experiments, charts (plots.py) and checks (check.py)."""
