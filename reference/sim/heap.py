"""What a component keeps: the sizes of every container reachable from it.

The whole-state bound of the simulation (`invariants.py`) asks that, once every request
has ended and been cleared, nothing a variant holds is bigger than before the workload.
It must not name tables: a fix that remembers cleared rooms in a new set of its own is
exactly what it is for. So it walks the object graph from the components (attributes,
slots, container items) and sizes every dict, set, list and deque it meets, by the path
it was first reached on (`KVManager.request_status`, `KVManager.cleared[*]`).

Infrastructure is not walked into: the transport, the clock, the hooks, the decode's KV
memory and inbox, threads, locks, modules, classes and functions. Those are the suite's
own objects, the same for every variant, and some of them count per request by design.
A variant names more in `SIM_OPAQUE` (attribute names): the upstream adapter's wiring, and
upstream's class-level ZMQ connect cache, which our variants keep in the transport.
"""

from __future__ import annotations

import threading
import types
from collections import deque
from collections.abc import Iterable
from typing import Any

CONTAINERS = (dict, set, frozenset, list, deque)
OPAQUE_MODULE_PREFIXES = (
    "reference.transport", "reference.clock", "reference.hooks", "reference.dataplane",
    "reference.common.decode_inbox", "reference.prefill", "reference.sim.notices", "threading", "logging",
    "random", "asyncio", "concurrent", "queue", "_thread", "socket", "zmq",
)  # fmt: skip
LEAF_TYPES = (str, bytes, bytearray, int, float, bool, complex, type(None), range)
OPAQUE_TYPES = (
    *LEAF_TYPES,
    types.ModuleType,
    type,
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    threading.Thread,
    threading.Event,
    threading.Condition,
)


def container_sizes(roots: dict[str, Any], opaque_attributes: frozenset[str] = frozenset()) -> dict[str, int]:
    """{path: len} for every container reachable from `roots` ({name: object}), not walking
    into attributes named in `opaque_attributes` (a variant's `SIM_OPAQUE`)."""
    sizes: dict[str, int] = {}
    seen: set[int] = set()
    stack: list[tuple[str, Any]] = list(roots.items())[::-1]
    while stack:
        path, obj = stack.pop()
        if id(obj) in seen or _opaque(obj):
            continue
        seen.add(id(obj))
        if isinstance(obj, CONTAINERS):
            sizes[path] = sizes.get(path, 0) + len(obj)
        stack.extend(reversed(list(_children(path, obj, opaque_attributes))))
    return sizes


def grown(before: dict[str, int], after: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Paths whose size is larger after than before: {path: (before, after)}."""
    return {p: (before.get(p, 0), n) for p, n in sorted(after.items()) if n > before.get(p, 0)}


def _opaque(obj: Any) -> bool:
    if isinstance(obj, OPAQUE_TYPES):
        return True
    module = getattr(type(obj), "__module__", "") or ""
    return module.startswith(OPAQUE_MODULE_PREFIXES) or type(obj).__name__ in {"lock", "RLock"}


def _children(path: str, obj: Any, opaque_attributes: frozenset[str]) -> Iterable[tuple[str, Any]]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield f"{path}[*]", key
            yield f"{path}[*]", value
    elif isinstance(obj, CONTAINERS):
        for item in obj:
            yield f"{path}[*]", item
    elif isinstance(obj, tuple):
        for item in obj:
            yield path, item
    else:
        yield from _attributes(path, obj, opaque_attributes)


def _attributes(path: str, obj: Any, opaque_attributes: frozenset[str]) -> Iterable[tuple[str, Any]]:
    name = type(obj).__name__ if "." not in path and "[" not in path else path
    fields = getattr(obj, "__dict__", None)
    if isinstance(fields, dict):
        for attr, value in fields.items():
            if attr not in opaque_attributes:
                yield f"{name}.{attr}", value
    for slot in getattr(type(obj), "__slots__", ()):
        if isinstance(slot, str) and slot not in opaque_attributes and hasattr(obj, slot):
            yield f"{name}.{slot}", getattr(obj, slot)
