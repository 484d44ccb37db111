"""xCOMET translation-quality scoring in an isolated environment (unbabel-comet needs transformers < 5).

In the main environment: ``config`` (the keys), ``scoring`` (items, cache, the runner subprocess), ``summary``
(means and intervals in the metrics' shape), ``folder`` (a results folder on the folder driver) and ``step`` (the
pipeline's xcomet step) drive ``runner``, run by path with ``.venv-comet/bin/python``; ``tiny`` builds an offline
XCOMET-architecture checkpoint for tests; ``env`` locates and builds the environment. Nothing is imported here, so
that the comet-side scripts never pull in gnt's dependencies.
"""
