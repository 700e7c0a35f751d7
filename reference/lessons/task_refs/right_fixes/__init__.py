"""Correct alternative fixes of `task-refs`, each a variant module for `--impl`.

Each module is `reference.fixed` with the DP dispatcher's `start` and the bootstrap
server's `_start_background_tasks` written differently from PR #33048's set plus
`discard` callback, yet correct; its docstring says why. `tests/test_right_fixes.py`
asserts each is `ok` on every check of every fix lesson.
"""
