"""Lesson 09: workflows over object storage (seed 004's pipeline with Snakemake 9 and an S3 bucket).

    from iolab.lessons.l09_workflows import lab, experiments, claims, plots, check
    with lab.open_lab(ws) as L:            # SeaweedFS with its counters, the data set in a bucket
        c1 = experiments.workflow(L, cores=1)
    experiments.workflow(None, cores=1)    # replayed from data/recorded/workflows/snakemake-c1.json

Modules: ``data`` (the seeded data set), ``lab`` (the store, the bucket, the scratch sampler),
``runs`` (a program run as a measured step), ``experiments`` (the runs and what they show),
``claims``, ``plots``, ``check`` (the exercise). The Snakefile is this package's ``Snakefile``.
"""
