"""Correct alternative fixes of `stale-bootstrap`, each a variant module for `--impl`.

Each module is `reference.fixed` with the receiver's cache handling (and, where it
needs one, the manager) written differently from PR #36029's, yet correct; its
docstring says why. `tests/test_right_fixes.py` asserts each is `ok` on every check of
every fix lesson.
"""
