"""The lessons' experiments and what they showed: one module per lesson, or a few where a lesson has
parts that stand alone (lesson 06: :mod:`.object_storage`, :mod:`.object_reads`, :mod:`.object_transfers`).

A module here runs a lesson's experiments through the tool modules (``iolab.tools``, which only wrap
their tools), live or replayed from a recording, and returns each result as an
:class:`iolab.recordings.Outcome` (or a subclass with the lesson's own fields): where it came from
(``provenance``), the parse (``data``) and the lesson's table of it (``frame``). It says what they
showed with :mod:`iolab.explain` claims computed from the numbers, so that a lesson reads correctly
live on any machine and replayed from any recording.
"""
