"""Lesson 07 (Darshan and MPI-IO): notebooks/07-darshan-mpiio.ipynb and its exercise; its experiments, charts (plots.py) and checks (check.py)."""
