"""Tempting wrong fixes the explorations must reject (`tests/test_explore.py`).

Each module is a variant: the fixed form with one plausible mistake. They live in the
tests, not the package: they exist to show that the explorations' invariants catch
wrong fixes, not only our buggy form.
"""
