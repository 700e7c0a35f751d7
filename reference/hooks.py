"""Named hook points at race windows.

A component calls `self.hooks.fire("name", *args)` at a point where, in production, a
concurrent step could interleave. A test or scenario installs the concurrent step with
`hooks.set("name", fn)`. With nothing installed, `fire` is one dict lookup. This is how
races that upstream called "impossible to test deterministically" get a fixed order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Hook = Callable[..., None]


class Hooks:
    def __init__(self) -> None:
        self._hooks: dict[str, Hook] = {}

    def set(self, name: str, fn: Hook) -> None:
        self._hooks[name] = fn

    def clear(self, name: str) -> None:
        self._hooks.pop(name, None)

    def fire(self, name: str, *args: Any) -> None:
        fn = self._hooks.get(name)
        if fn is not None:
            fn(*args)
