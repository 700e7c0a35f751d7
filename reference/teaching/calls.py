"""How often the learner's own methods ran while the checklist judged them.

A fix that is never called and a fix that runs without changing what the checks read both
leave the checklist's verdict at `BUG`, with the same symptoms as the unfixed exercise; the
learner needs to know which. `counting(variant, written)` wraps each plain method the
learner's classes define themselves (not inherited, not `async def`, whose coroutine names
the checks read; never a class of the `reference` package a cell passes along) in a
counter for the duration of the check, and restores the class after; `summary` says what
ran, how often, and what never ran.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any


def _own_methods(cls: type) -> list[tuple[str, Callable[..., Any]]]:
    return [
        (name, fn)
        for name, fn in vars(cls).items()
        if inspect.isfunction(fn) and not name.startswith("__") and not inspect.iscoroutinefunction(fn)
    ]


@contextlib.contextmanager
def counting(variant: ModuleType, written: Sequence[str]) -> Iterator[dict[str, int]]:
    """Calls per `Class.method` of the learner's classes named in `written`, while inside."""
    counts: dict[str, int] = {}
    lock = threading.Lock()
    patched: list[tuple[type, str, Callable[..., Any]]] = []

    def counted(key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with lock:
                counts[key] += 1
            return fn(*args, **kwargs)

        return wrapper

    for component in written:
        cls = getattr(variant, component)
        if cls.__module__.split(".")[0] == "reference":  # a shipped class lent to the cell: not theirs
            continue
        for name, fn in _own_methods(cls):
            counts[f"{component}.{name}"] = 0
            setattr(cls, name, counted(f"{component}.{name}", fn))
            patched.append((cls, name, fn))
    try:
        yield counts
    finally:
        for cls, name, fn in patched:
            setattr(cls, name, fn)


def summary(counts: Mapping[str, int], verdict: str) -> list[str]:
    """Lines for the report: what ran and how often, and what never ran."""
    ran = {key: n for key, n in counts.items() if n}
    never = [key for key, n in counts.items() if not n]
    lines = []
    if ran:
        each = ", ".join(f"{key} {n} times" for key, n in ran.items())
        lines.append(f"Your code ran during the checks: {each}")
        if verdict != "ok":
            lines.append("It ran, and the checks above still saw the bug.")
    if never:
        names = ", ".join(never)
        lines.append(f"Never called during the checks: {names} (is it the name the buggy form uses?)")
    return lines
