"""The history checker: which operations were lost or failed, and why; which invariants broke.

`check(history, invariants)` reads a finished history: an operation never completed is
lost; a `fail` carries its reason and the faults active while it ran; an `info` is an
unknown outcome. Each invariant is a function from the history to the list of its
violations (the same properties the mock simulation checks, where they apply: e.g. "no
request invoked after every fault healed fails"). The result's verdict is `bug` when
an invariant broke or an operation was lost, `ok` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from reference.netns.history import History, Op

Invariant = Callable[[History], list[str]]


@dataclass
class Checked:
    verdict: str
    lost: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)  # op index -> why (and during which faults)
    unknown: list[int] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    def summary(self) -> str:
        ok = self.verdict == "ok"
        parts = [f"{len(self.failed)} failed", f"{len(self.lost)} lost", f"{len(self.unknown)} unknown"]
        broke = "; ".join(self.violations) if self.violations else "every invariant held"
        return f"{'ok' if ok else 'bug'}: {', '.join(parts)}; {broke}"


def check(history: History, invariants: Sequence[Invariant] = ()) -> Checked:
    result = Checked("ok")
    for op in history.ops:
        if op.completed is None:
            result.lost.append(op.index)
        elif op.type == "fail":
            faults = ", ".join(f.name for f in history.during(op)) or "no fault"
            result.failed[op.index] = f"{op.why or 'failed'} (during: {faults})"
        elif op.type == "info":
            result.unknown.append(op.index)
    for invariant in invariants:
        result.violations += invariant(history)
    if result.lost:
        result.violations.append(f"operations never completed: {result.lost}")
    result.verdict = "bug" if result.violations else "ok"
    return result


def after_heal_all_ok(history: History) -> list[str]:
    """Every operation invoked after the last fault healed completes ok."""
    healed = [f.healed for f in history.faults]
    if not healed or None in healed:
        return []
    last = max(h for h in healed if h is not None)
    bad: list[Op] = [op for op in history.ops if op.invoked > last and op.type != "ok"]
    return [
        f"op {op.index} ({op.f} {op.value}) invoked after every heal ended {op.type}: {op.why}" for op in bad
    ]


def no_fail_without_fault(history: History) -> list[str]:
    """An operation that ran while no fault was active does not fail."""
    return [
        f"op {op.index} ({op.f} {op.value}) failed with no fault active: {op.why}"
        for op in history.ops
        if op.type == "fail" and not history.during(op)
    ]


def none_fail_while_ranks_reachable(history: History) -> list[str]:
    """No operation fails (for a fault that leaves the prefill's ranks reachable)."""
    return [
        f"op {op.index} ({op.f} {op.value}) failed though the prefill's ranks were reachable: {op.why}"
        for op in history.ops
        if op.type == "fail"
    ]
