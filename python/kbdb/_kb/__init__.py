"""The bodies of the :class:`~kbdb.kb.KnowledgeBase` methods that a search never runs.

``kbdb/kb.py`` is the facade: every public method, its signature and its docstring stay
there, and the longer ones call a function of this package, imported inside the method.
So a cold ``kbdb search`` loads none of it (benches/bench_cold_start.py), and ``kb.py``
reads as the API. One module per area: ``learning``, ``reading``, ``knowledge``
(contradictions, skills) and ``maintenance``.
"""
