"""The lessons' experiments and what they showed: one module per lesson.

A module here runs a lesson's experiments through the tool modules (``iolab.tools``), returns
their results, and says what they showed with :mod:`iolab.explain` claims computed from the
numbers, so that a lesson reads correctly live on any machine and replayed from any recording.
"""
