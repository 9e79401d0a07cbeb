"""Lesson 05 (mdtest: metadata): notebooks/05-mdtest-metadata.ipynb and its exercise; its experiments, charts (plots.py) and checks (check.py)."""
