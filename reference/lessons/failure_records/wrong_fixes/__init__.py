"""Tempting wrong fixes of `failure-records`, each a variant module for `--impl`.

Each module is `reference.hardened` with one item of the lesson's hardened list undone
or done the tempting way; its docstring says why it tempts, why it is wrong and which
item it breaks. `tests/test_residual_wrong_fixes.py` asserts each is `bug`.
"""
