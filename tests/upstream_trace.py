"""Tracing of upstream's code in a test: which lines of a wheel's files ran, on every thread."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def traced(prefix: str) -> Iterator[tuple[set[tuple[str, int]], set[str]]]:
    """(file, line) executed and qualified names called, in code under `prefix`."""
    lines: set[tuple[str, int]] = set()
    called: set[str] = set()

    def tracer(frame, event, _arg):
        code = frame.f_code
        if not code.co_filename.startswith(prefix):
            return None
        called.add(code.co_qualname)

        def local(frame, event, _arg):
            if event == "line":
                lines.add((frame.f_code.co_filename.removeprefix(prefix), frame.f_lineno))
            return local

        return local

    previous = sys.gettrace()
    sys.settrace(tracer)
    threading.settrace(tracer)
    try:
        yield lines, called
    finally:
        sys.settrace(previous)
        threading.settrace(None)  # type: ignore[arg-type]
