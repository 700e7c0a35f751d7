"""Progress of a lesson's stress trials, for whoever is watching.

A stress loop calls `trial(done, total, fired)` before its first trial and after each
one. Nobody listens by default (the library API, the tests); the isolation worker
(`reference/harness/worker.py`) listens and forwards it to the CLI, which shows it on
a terminal and, when interrupted, reports the rate so far.
"""

from __future__ import annotations

from collections.abc import Callable

Listener = Callable[[int, int, int], None]

_listener: Listener | None = None


def listen(listener: Listener | None) -> None:
    """Send every later `trial` call to `listener` (None: stop listening)."""
    global _listener
    _listener = listener


def trial(done: int, total: int, fired: int) -> None:
    """`done` of `total` trials finished, `fired` of them saw the race."""
    if _listener is not None:
        _listener(done, total, fired)
