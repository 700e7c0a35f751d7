"""Correct alternative fixes of `live-set-race`, each a variant module for `--impl`.

Each module is `reference.fixed` with `_handle_node_failure` written differently from
upstream's `list(...)` snapshot, yet correct; its docstring says why.
`tests/test_right_fixes.py` asserts each is `ok` on every check of every fix lesson.
"""
