"""Catch what a background thread raises, the way a log reader would see it.

Upstream's heartbeat thread has no try around `_handle_node_failure`; an exception
there ends the thread and Python reports it through `threading.excepthook`. Scenarios
install this capture for their duration so the exception becomes evidence.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class ThreadErrors:
    errors: list[tuple[str, BaseException]] = field(default_factory=list)

    def describe(self) -> str:
        return "; ".join(f"{name}: {type(e).__name__}: {e}" for name, e in self.errors)


@contextmanager
def thread_errors() -> Iterator[ThreadErrors]:
    caught = ThreadErrors()
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        name = args.thread.name if args.thread is not None else "?"
        if args.exc_value is not None:
            caught.errors.append((name, args.exc_value))

    threading.excepthook = hook
    try:
        yield caught
    finally:
        threading.excepthook = previous
