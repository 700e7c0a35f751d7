"""How often the learner's own methods ran while the checklist judged them, and what they changed.

A fix that is never called and a fix that runs without changing what the checks read both
leave the checklist's verdict at `BUG`, with the same symptoms as the unfixed exercise; the
learner needs to know which. `counting(variant, written)` wraps each plain method the
learner's classes define themselves (not inherited, not `async def`, whose coroutine names
the checks read; never a class of the `reference` package a cell passes along) in a
counter for the duration of the check, and restores the class after; `summary` says what
ran, how often, and what never ran.

Each counted call also compares the instance's attributes before and after it (and those
of a component it holds, such as a receiver's `self.kv_mgr`): a dict, set or list by its
entries (a value by identity unless it is a number or a string), anything else by identity.
So a fix that ran and changed nothing (an invalidation that matched no entry) reads
differently from one that changed the wrong thing: the report names what each method's
calls changed, and in how many of them. A snapshot that another thread's mutation
interrupts is skipped, never raised into the learner's code.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

PLAIN = (int, float, str, bytes, bool, type(None))


@dataclass
class Tally:
    """Calls per `Class.method`; per method, how many calls changed each attribute path; the
    components (`self.kv_mgr`) whose attributes were compared too."""

    counts: dict[str, int] = field(default_factory=dict)
    changes: dict[str, dict[str, int]] = field(default_factory=dict)
    held: dict[str, set[str]] = field(default_factory=dict)


def _own_methods(cls: type) -> list[tuple[str, Callable[..., Any]]]:
    return [
        (name, fn)
        for name, fn in vars(cls).items()
        if inspect.isfunction(fn) and not name.startswith("__") and not inspect.iscoroutinefunction(fn)
    ]


def _leaf(value: Any) -> Any:
    return value if isinstance(value, PLAIN) else ("id", id(value))


def _print(value: Any) -> Any:
    """A comparable picture of one attribute: containers by entries, the rest by identity."""
    if isinstance(value, dict):
        return ("dict", tuple((key, _leaf(v)) for key, v in list(value.items())))
    if isinstance(value, set | frozenset):
        return ("set", frozenset(value), id(value))
    if isinstance(value, list | tuple | deque):
        return ("seq", tuple(_leaf(v) for v in list(value)), id(value))
    return _leaf(value)


def _snapshot(obj: Any, components: tuple[type, ...]) -> dict[str, Any] | None:
    """`self.<attr>` -> its picture, and `self.<attr>.<sub>` for a component `obj` holds;
    None when it cannot be read (no `__dict__`, or another thread changed it meanwhile)."""
    try:
        seen: dict[str, Any] = {}
        for name, value in list(vars(obj).items()):
            seen[f"self.{name}"] = _print(value)
            if isinstance(value, components) and value is not obj:
                seen |= {f"self.{name}.{sub}": _print(v) for sub, v in list(vars(value).items())}
        return seen
    except (TypeError, RuntimeError):
        return None


def _changed(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[str] | None:
    if before is None or after is None:
        return None
    return sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))


@contextlib.contextmanager
def counting(variant: ModuleType, written: Sequence[str]) -> Iterator[Tally]:
    """Calls (and what they changed) per `Class.method` of the learner's classes named in
    `written`, while inside."""
    tally = Tally()
    lock = threading.Lock()
    patched: list[tuple[type, str, Callable[..., Any]]] = []
    components = tuple(c for c in vars(variant).values() if isinstance(c, type))

    def counted(key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            before = _snapshot(self, components)
            try:
                return fn(self, *args, **kwargs)
            finally:
                changed = _changed(before, _snapshot(self, components))
                with lock:
                    tally.counts[key] += 1
                    held = {k.rsplit(".", 1)[0] for k in before or () if k.count(".") == 2}
                    tally.held[key] |= held
                    for path in changed or ():
                        tally.changes[key][path] = tally.changes[key].get(path, 0) + 1

        return wrapper

    for component in written:
        cls = getattr(variant, component)
        if cls.__module__.split(".")[0] == "reference":  # a shipped class lent to the cell: not theirs
            continue
        for name, fn in _own_methods(cls):
            key = f"{component}.{name}"
            tally.counts[key], tally.changes[key], tally.held[key] = 0, {}, set()
            setattr(cls, name, counted(key, fn))
            patched.append((cls, name, fn))
    try:
        yield tally
    finally:
        for cls, name, fn in patched:
            setattr(cls, name, fn)


def _effects(key: str, calls: int, changes: Mapping[str, int], held: set[str]) -> str:
    where = " or ".join(["self", *sorted(held)])
    if not changes:
        return (
            f"What {key} changed: nothing. No attribute of {where} differed after any of its {calls} calls "
            "(an invalidation that matched no entry, or a write to a copy, reads so)."
        )
    each = ", ".join(f"{path} (in {n} of {calls} calls)" for path, n in sorted(changes.items()))
    return f"What {key} changed: {each}; no other attribute of {where}."


def summary(
    counts: Mapping[str, int],
    verdict: str,
    changes: Mapping[str, Mapping[str, int]] | None = None,
    held: Mapping[str, set[str]] | None = None,
) -> list[str]:
    """Lines for the report: what ran and how often, what it changed (when the checks still
    saw the bug), and what never ran."""
    ran = {key: n for key, n in counts.items() if n}
    never = [key for key, n in counts.items() if not n]
    lines = []
    if ran:
        each = ", ".join(f"{key} {n} times" for key, n in ran.items())
        lines.append(f"Your code ran during the checks: {each}")
        if verdict != "ok":
            if changes is not None:
                lines += [
                    _effects(k, n, changes.get(k, {}), (held or {}).get(k, set())) for k, n in ran.items()
                ]
            lines.append("It ran, and the checks above still saw the bug.")
    if never:
        names = ", ".join(never)
        lines.append(f"Never called during the checks: {names} (is it the name the buggy form uses?)")
    return lines
