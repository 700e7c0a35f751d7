"""Tempting wrong fixes of `task-refs`, each a variant module for `--impl`.

Each module is `reference.fixed` with the DP dispatcher's `start` (or the bootstrap
server's `_start_background_tasks`) rewritten the way an engineer might plausibly keep
its tasks; its docstring says why it is tempting and why it is wrong, and the lesson
README's gallery names the check that catches it.
"""
