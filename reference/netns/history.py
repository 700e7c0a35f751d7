"""A run's history: operations (invoke, then ok, fail or info) and nemesis events, in time.

Jepsen's model, small: each request is an operation by a process (a host's client),
recorded once when invoked and once when it completes, `ok` (it happened), `fail` (it
did not, with why) or `info` (unknown: it may or may not have). A nemesis fault is two
events, its start and its heal, on the host it hit. Times are real seconds since the
history began (`time.monotonic`). `check(history, invariants)` (checker.py) reads it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

COMPLETIONS = ("ok", "fail", "info")


@dataclass
class Op:
    index: int
    process: str  # the host (lane) that issued it
    f: str  # what it does, e.g. "request"
    value: Any
    invoked: float
    type: str = "invoke"  # until completed: ok, fail, info
    completed: float | None = None
    result: Any = None
    why: str = ""


@dataclass
class Fault:
    name: str  # e.g. "partition decode<->prefill-0"
    hosts: tuple[str, ...]
    started: float
    healed: float | None = None
    detail: str = ""


@dataclass
class History:
    ops: list[Op] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    clock: Callable[[], float] = time.monotonic  # a test passes its own
    t0: float | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        if self.t0 is None:
            self.t0 = self.clock()

    def now(self) -> float:
        assert self.t0 is not None
        return self.clock() - self.t0

    def invoke(self, process: str, f: str, value: Any) -> Op:
        with self._lock:
            op = Op(len(self.ops), process, f, value, self.now())
            self.ops.append(op)
            return op

    def complete(self, op: Op, type: str, result: Any = None, why: str = "") -> None:
        if type not in COMPLETIONS:
            raise ValueError(f"an operation completes as one of {COMPLETIONS}, not {type!r}")
        if op.completed is not None:
            raise ValueError(f"operation {op.index} completed twice")
        op.type, op.completed, op.result, op.why = type, self.now(), result, why

    def fault(self, name: str, hosts: tuple[str, ...], detail: str = "") -> Fault:
        with self._lock:
            fault = Fault(name, hosts, self.now(), detail=detail)
            self.faults.append(fault)
            return fault

    def heal(self, fault: Fault) -> None:
        fault.healed = self.now()

    def during(self, op: Op) -> list[Fault]:
        """The faults active at any time between the op's invoke and completion."""
        end = op.completed if op.completed is not None else self.now()
        return [f for f in self.faults if f.started <= end and (f.healed is None or f.healed >= op.invoked)]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> History:
        """A finished history back from `to_json` (times as recorded; `now()` is the end)."""
        ops = [Op(**op) for op in data.get("ops", [])]
        faults = [Fault(**{**f, "hosts": tuple(f["hosts"])}) for f in data.get("faults", [])]
        end = max(
            [0.0, *(op.completed or op.invoked for op in ops), *(f.healed or f.started for f in faults)]
        )
        history = cls(clock=lambda: end, t0=0.0)
        history.ops, history.faults = ops, faults
        return history

    def to_json(self) -> dict[str, Any]:
        return {
            "ops": [vars(op) for op in self.ops],  # times: seconds since the history began
            "faults": [vars(f) for f in self.faults],
        }
