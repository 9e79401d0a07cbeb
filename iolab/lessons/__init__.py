"""The lessons, one package each (``lNN_topic``): a lesson's experiments and claims, its charts
(``plots.py``), its exercise checks (``check.py``) and the declaration of what its recordings consist
of, read by the lesson and by its recorder alike. What every lesson shares stays on the floors below
(``iolab.plot``, ``iolab.check``, ``iolab.explain``, ``iolab.recordings``)."""
