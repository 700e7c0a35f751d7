"""Tempting wrong fixes of lesson `stale-bootstrap`, each an `--impl`-loadable variant.

Each module is our fixed form (or, for `send_pop_by_key`, the buggy form) with one
method of `KVReceiver` rewritten the way an engineer plausibly would, and a docstring
saying why it is tempting and why it is wrong. The lesson's checklist must give each
one `bug` (tests/test_stale_bootstrap_checks.py); the README's gallery names the check
that catches it. Run one: `python -m reference --impl reference.lessons.stale_bootstrap.wrong_fixes.by_key`.
"""
