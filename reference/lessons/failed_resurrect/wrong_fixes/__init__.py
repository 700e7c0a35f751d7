"""Tempting wrong fixes of `failed-resurrect`, each a variant module for `--impl`.

Each module is `reference.fixed` with one method overridden the way an engineer might
plausibly write the fix; its docstring says why it is tempting and why it is wrong,
and the lesson README's gallery names the check that catches it.
"""
