"""Lesson 01 (the page cache): notebooks/01-page-cache.ipynb and its exercise; its experiments, charts (plots.py) and checks (check.py)."""
