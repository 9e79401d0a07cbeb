"""Lesson 02 (readahead): notebooks/02-readahead.ipynb and its exercise; its experiments, charts (plots.py) and checks (check.py)."""
