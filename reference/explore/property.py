"""What one exploration is: a small world, the threads that race in it, and the invariant.

A `Property` names one behaviour a fix guarantees, as a check over the state a set of
threads leaves behind. The explorer (`runner.py`) runs those threads under frontrun's
DPOR scheduler over every interleaving up to a preemption bound, with no hook points:
the component code runs as written and frontrun decides where threads switch.

`check(state)` returns the problems it sees (empty when the property holds). It looks
only at what any variant exposes (`request_status`, `connection_pool`, what the stub
transport was sent, exceptions raised in the threads), never at how our fixed form
does it, so any correct fix passes it.

`claimed=False` marks a property the upstream fix does not claim (a residual race that
upstream still has): it is explored and reported, but no verdict is expected of it.
`hardened_only=True` marks a claim about how the hardened form locks a step that buggy
and fixed do not have (or do in one unlocked call): `--explore` reports it on those two,
without a verdict (their lesson is `bug` on its story and simulation); on `--impl` and
hardened it is judged, and it is a deep check of its lesson everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

Worker = Callable[[Any], None]


@dataclass(frozen=True)
class Property:
    lesson: str
    id: str
    claim: str  # what holds, one line
    needs: tuple[str, ...]  # components (or Component.member) the variant must provide
    setup: Callable[[ModuleType], Any]  # a fresh world for one interleaving
    workers: tuple[tuple[str, Worker], ...]  # (lane name, body run on its own thread)
    check: Callable[[Any], list[str]]  # problems; empty when the property holds
    bound: int | None = None  # preemption bound; None: exhaustive (every DPOR-distinct interleaving)
    max_executions: int | None = None
    claimed: bool = True
    hardened_only: bool = False


class ThreadErrors:
    """Exceptions that escaped a worker, one line each: a thread that dies is a finding."""

    def __init__(self) -> None:
        self.errors: list[str] = []


def guarded(lane: str, body: Worker) -> Worker:
    """`body` with its exceptions recorded on `state.errors` instead of ending the run.

    frontrun's own control exceptions (deadlock, scheduler abort) pass through.
    """

    def run(state: Any) -> None:
        try:
            body(state)
        except Exception as exc:
            if type(exc).__module__.startswith("frontrun"):
                raise
            state.errors.append(f"{lane}: {type(exc).__name__}: {exc}{_where(exc)}")

    run.__name__ = lane
    return run


def _where(exc: BaseException) -> str:
    """` at file:line `source`` of the innermost frame outside this harness."""
    import linecache
    import os
    import traceback

    here = os.path.dirname(os.path.abspath(__file__))
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(here)]
    if not frames:
        return ""
    last = frames[-1]
    source = (last.line or linecache.getline(last.filename, last.lineno or 0)).strip()
    return f" at {os.path.basename(last.filename)}:{last.lineno} `{source}`"
