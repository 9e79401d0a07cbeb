"""The instructor's class results (notebooks/instructor/class-results.ipynb): notebooks/instructor/class-results.ipynb and its exercise; its experiments, charts (plots.py) and checks (check.py)."""
