"""Tempting wrong fixes of `live-set-race`, each a variant module for `--impl`.

Each module is `reference.fixed` with `_handle_node_failure` (or the heartbeat's probe)
rewritten the way an engineer might plausibly fix the race; its docstring says why it
is tempting and why it is wrong, and the lesson README's gallery names the check that
catches it. `live_set_pop` is also one of the explorations' wrong fixes.
"""
