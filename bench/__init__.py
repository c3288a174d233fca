"""The gateway against the API server it fronts, measured side by side (``python -m bench``).

Not part of the test suite: a run takes minutes and its figures depend on the
machine. ``tests/test_bench.py`` runs the same code at a tiny size so that it
keeps working.
"""
