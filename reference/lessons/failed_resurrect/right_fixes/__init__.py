"""Correct alternative fixes of `failed-resurrect`, each a variant module for `--impl`.

Each module is `reference.fixed` with `update_status` (and what it needs) written
differently from upstream's two lines, yet correct; its docstring says why. They keep
the checker honest about false positives: `tests/test_right_fixes.py` asserts each is
`ok` on every check of every fix lesson.
"""
