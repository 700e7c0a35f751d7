"""Correct alternative fixes of `stale-tracker`, each a variant module for `--impl`.

Each module is `reference.hardened` with the part that closes this residual written
differently, yet correct; its docstring says why. `tests/test_right_fixes.py` asserts
each is `ok` on every check of every lesson, as `reference.hardened` is.
"""
