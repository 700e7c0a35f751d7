"""Live experiments for lesson `failed-resurrect` (PR #24539), beyond its scenario.

The scenario shows the leak. These show the edges the fix leaves open, on the real
managers of both forms:

- a reused `bootstrap_room`: the old request's late abort can land before the new
  request opens (harmless to the new request even in the buggy form, because its first
  write lifts Failed(0) back up through `max()`) or after (the new request reads Failed
  in both forms: #24539 does not cover it);
- Failed is not terminal for a present room: `max(Failed, x)` un-fails it (flagged in
  upstream review of #19205; Failed is terminal in sglang 0.5.23's `update_status`, not
  yet in 0.5.19's).

It also checks the notebook's exercise, and gives the notebook the real code that orders
the late Failed after `clear()` (`ordering_source`): the scenario's, in one thread, and the
explorer's two threads, which have no order at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

import reference.buggy
import reference.fixed
from reference.explore import failed_resurrect as explored
from reference.lessons.failed_resurrect import scenario
from reference.status import KVPoll
from reference.teaching.exercises import Feedback, check_choice
from reference.teaching.sources import Source, source
from reference.transport.mock import MockNetwork

ROOM = 7
ORDERS = ("abort-before-open", "abort-after-open")


@dataclass(frozen=True)
class ReuseOutcome:
    variant: str
    order: str
    new_request_reads: str  # what the new request's first poll sees
    table: dict[int, str]  # request_status right after, by status name

    def __str__(self) -> str:
        return (
            f"{self.variant:>6}, {self.order}: new request reads {self.new_request_reads}; table {self.table}"
        )


def _table(manager) -> dict[int, str]:
    return {room: KVPoll(status).name for room, status in manager.request_status.items()}


def reused_room(variant: ModuleType, order: str) -> ReuseOutcome:
    """Request A on room 7 is cleared; request B reuses room 7; A's late abort lands."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    manager = variant.KVManager(MockNetwork())
    manager.update_status(ROOM, KVPoll.Bootstrapping)  # request A opens ...
    manager.update_status(ROOM, KVPoll.WaitingForInput)
    manager.clear(ROOM)  # ... and is done
    if order == "abort-before-open":
        manager.abort(ROOM)  # A's late abort
        manager.update_status(ROOM, KVPoll.Bootstrapping)  # B opens
    else:
        manager.update_status(ROOM, KVPoll.Bootstrapping)  # B opens
        manager.abort(ROOM)  # A's late abort
    reads = KVPoll(manager.check_status(ROOM)).name
    return ReuseOutcome(_name(variant), order, reads, _table(manager))


def failed_then_lifted(variant: ModuleType) -> str:
    """A present room is failed, then a slower non-Failed write arrives: what is left?"""
    manager = variant.KVManager(MockNetwork())
    manager.update_status(ROOM, KVPoll.WaitingForInput)
    manager.update_status(ROOM, KVPoll.Failed)
    manager.update_status(ROOM, KVPoll.Transferring)
    return KVPoll(manager.check_status(ROOM)).name


def _name(variant: ModuleType) -> str:
    return variant.__name__.rsplit(".", 1)[-1]


def both_forms_reused(order: str) -> str:
    return "\n".join(str(reused_room(v, order)) for v in (reference.buggy, reference.fixed))


EXERCISE_CHOICES = ("a", "b", "c")
EXERCISE = """\
Request A on room 7 was cleared. A's late abort lands BEFORE request B, which reuses
room 7, opens. On the BUGGY form, what does B's first poll read?
  (a) Bootstrapping   (b) Failed   (c) KeyError (the room is absent)"""


def check_exercise(answer: object) -> Feedback:
    outcome = reused_room(reference.buggy, "abort-before-open")
    truth = {"Bootstrapping": "a", "Failed": "b"}.get(outcome.new_request_reads, "c")
    return check_choice(
        answer,
        truth,
        EXERCISE_CHOICES,
        why="The late abort did resurrect room 7 as Failed(0), but B's first write is "
        "Bootstrapping(1) and a present room keeps max(old, new): B is not polluted. "
        "The buggy form differs only in between: the table holds a Failed entry that no "
        "request owns (and keeps it for good if room 7 is never reused).",
        hint="look at the branch update_status takes when the room is present and the "
        "new status is not Failed, and at KVPoll's numeric order.",
        evidence=both_forms_reused("abort-before-open"),
    )


def ordering_source() -> Source:
    """The scenario delivers the late abort after `clear()` in program order (one thread);
    the explorer runs `clear()` and the late Failed on two threads with no hook, and its
    check judges only the runs where the Failed started after `clear()` returned."""
    return source(
        scenario.late_abort,
        scenario.observe,
        explored.scheduler_clear,
        explored.late_failed,
        explored.check_late,
    )
