"""Live experiments for lesson `live-set-race` (PR #36351), beyond its scenario.

The scenario drives the heartbeat thread on a virtual clock. Here the failure handler
runs on the caller's thread, so a notebook can catch what it raises and look at every
room afterwards. The concurrent step is placed with the same hook points:

- `by_hand`: mori's status thread discards a finished room mid-iteration (the bug);
- `reindex_mid_failure`: a new receiver tracks a room on the failing prefill
  mid-iteration (the exercise: re-indexing mutators are safe, but is the room safe?);
- `stale_pop`: what the fix leaves open. Mori's cleanup pops the address when *its*
  set became empty, but its set may be a stale one the failure handler already
  popped; the pop then removes the fresh set of a restarted prefill, and that
  prefill's next failure misses the new room. It needs the cleanup to stall across a
  failure and a restart, which hooks make certain and production makes rare; mori's
  helper is still in sglang 0.5.19's `mori/conn.py` and gone from 0.5.23's.

For the notebook's mechanism cells: `ordering_source`, the real code that parks mori's
status thread and releases it from inside the handler's loop, and `call`, which makes one
call on the notebook's thread and says what it returned or raised (a cell that calls the
buggy handler itself must not stop the notebook).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

import reference.buggy
import reference.fixed
from reference.common.manager import ManagerBase
from reference.harness.result import Result
from reference.hooks import Hooks
from reference.lessons.live_set_race import scenario
from reference.lessons.live_set_race.scenario import StatusThreadCleanup
from reference.status import KVPoll
from reference.teaching.exercises import Feedback, check_choice
from reference.teaching.sources import Source, source
from reference.transport.mock import MockNetwork

if TYPE_CHECKING:  # plots needs matplotlib; the experiments do not
    from reference.teaching.plots import Span

ADDR = "10.0.0.1:8998"
IN_FLIGHT, DONE, NEWCOMER = (1, 2, 3), 4, 9


@dataclass
class Outcome:
    variant: str
    error: str | None = None  # what `_handle_node_failure` raised, caught here
    statuses: dict[int, str] = field(default_factory=dict)
    tracked: list[int] = field(default_factory=list)  # rooms in tracker[ADDR] ...
    tracked_when: str = "afterwards"  # ... at this point

    def __str__(self) -> str:
        raised = f"raised {self.error}" if self.error else "returned normally"
        tracker = f"tracker[addr] {self.tracked_when}: {self.tracked}"
        return f"{self.variant:>6}: handler {raised}; rooms {self.statuses}; {tracker}"


def _manager(variant: ModuleType, rooms: tuple[int, ...]):
    hooks = Hooks()
    manager = variant.KVManager(MockNetwork(), hooks=hooks)
    manager.add_prefill(ADDR)
    for room in rooms:
        manager.track_room(ADDR, room)
        manager.update_status(room, KVPoll.WaitingForInput)
    return manager, hooks


def _fail(manager, outcome: Outcome) -> None:
    try:
        manager._handle_node_failure(ADDR)
    except RuntimeError as exc:
        outcome.error = f"{type(exc).__name__}: {exc}"


def _observe(manager, outcome: Outcome) -> Outcome:
    outcome.statuses = {r: KVPoll(s).name for r, s in sorted(manager.request_status.items())}
    outcome.tracked = sorted(manager.addr_to_rooms_tracker.get(ADDR, ()))
    return outcome


def _name(variant: ModuleType) -> str:
    return variant.__name__.rsplit(".", 1)[-1]


def by_hand(variant: ModuleType) -> Outcome:
    """Rooms 1-3 in flight, room 4 done; mori's cleanup of room 4 races the handler."""
    manager, hooks = _manager(variant, (*IN_FLIGHT, DONE))
    manager.update_status(DONE, KVPoll.Success)
    cleanup = StatusThreadCleanup(manager, hooks, DONE)
    outcome = Outcome(_name(variant))
    try:
        cleanup.start()  # parked right after it fetched the live set
        hooks.set("node_failure.after_room", cleanup.release_once)
        _fail(manager, outcome)
    finally:
        cleanup.stop()
    return _observe(manager, outcome)


def reindex_mid_failure(variant: ModuleType) -> Outcome:
    """A new receiver for room 9 arrives while the handler fails rooms 1-3."""
    manager, hooks = _manager(variant, IN_FLIGHT)

    def newcomer(_addr: str, _room: int) -> None:
        hooks.clear("node_failure.after_room")
        manager.track_room(ADDR, NEWCOMER)  # `tracker[addr].add(room)`, no lock, as upstream

    hooks.set("node_failure.after_room", newcomer)
    outcome = Outcome(_name(variant))
    _fail(manager, outcome)
    return _observe(manager, outcome)


def stale_pop(variant: ModuleType) -> Outcome:
    """Room 4 finishes as its prefill dies; the prefill restarts; room 9 arrives; it dies again."""
    manager, hooks = _manager(variant, (DONE,))
    manager.update_status(DONE, KVPoll.Success)
    cleanup = StatusThreadCleanup(manager, hooks, DONE)
    outcome = Outcome(_name(variant))
    try:
        cleanup.start()  # holds a reference to the set {4}
        _fail(manager, outcome)  # pops that set; room 4 succeeded, nothing to fail
        manager.add_prefill(ADDR)  # the prefill restarts behind the same address
        manager.track_room(ADDR, NEWCOMER)  # a fresh set {9}
        manager.update_status(NEWCOMER, KVPoll.WaitingForInput)
    finally:
        cleanup.stop()  # discards 4 from the stale set, finds it empty, pops ADDR
    tracked_before_second_failure = sorted(manager.addr_to_rooms_tracker.get(ADDR, ()))
    _fail(manager, outcome)  # the restarted prefill dies too
    _observe(manager, outcome)
    outcome.tracked, outcome.tracked_when = tracked_before_second_failure, "before the 2nd failure"
    return outcome


def heartbeat_spans(result: Result) -> list[Span]:
    """The scenario's heartbeat as lane spans: alive until it handled the first failure,
    then alive or dead as the scenario found it (`details["heartbeat_alive"]`)."""
    times = {event.what: event.t for event in result.timeline}
    handled, end = times["first-failure-handled"], times["second-failure-checked"]
    alive = bool(result.details["heartbeat_alive"])
    after = ("heartbeat thread running", True) if alive else ("heartbeat thread dead", False)
    return [(0.0, handled, "heartbeat thread running", True), (handled, end, *after)]


def heartbeat_probes(result: Result) -> list[float]:
    """When the heartbeat probed (every `heartbeat_interval` of virtual time from the start),
    up to the end of the scenario if it stayed alive, up to the first failure if it died."""
    from reference.lessons.live_set_race.scenario import CONFIG

    times = {event.what: event.t for event in result.timeline}
    alive = bool(result.details["heartbeat_alive"])
    end = times["second-failure-checked"] if alive else times["first-failure-handled"]
    interval = CONFIG.heartbeat_interval
    return [interval * k for k in range(1, int(end / interval + 1e-9) + 1)]


def both_forms(experiment) -> str:
    return "\n".join(str(experiment(v)) for v in (reference.buggy, reference.fixed))


EXERCISE_CHOICES = ("a", "b", "c")
EXERCISE = """\
Instead of mori's discard, a NEW receiver tracks room 9 on the failing prefill while the
handler is failing rooms 1-3 (`tracker[addr].add(9)`, no lock). On the BUGGY form:
  (a) the handler raises RuntimeError: Set changed size during iteration
  (b) no error; the handler does not fail room 9
  (c) no error; the handler fails room 9 with the others"""


def check_exercise(answer: object) -> Feedback:
    outcome = reindex_mid_failure(reference.buggy)
    failed = outcome.statuses.get(NEWCOMER) == "Failed"
    truth = "a" if outcome.error else ("c" if failed else "b")
    return check_choice(
        answer,
        truth,
        EXERCISE_CHOICES,
        why="The handler popped the set before iterating, so `tracker[addr]` hands the newcomer "
        "a fresh set from the defaultdict: the set being iterated never changes size, which is why "
        "upstream's PR calls re-indexing mutators safe. Room 9 is not in that set, so the handler "
        "leaves it alone; upstream, the receiver's own init() then finds the address gone from the "
        "prefill table and fails locally. The fresh tracker entry for the dead address stays behind.",
        hint="which set object does `tracker[addr]` return after `tracker.pop(addr)` on a defaultdict?",
        evidence=both_forms(reindex_mid_failure),
    )


def call(method: Callable[..., Any], *args: Any) -> str:
    """`method(*args)` on this thread: what it returned, or the exception it raised (the
    heartbeat thread would die of it; a notebook cell shows it instead)."""
    try:
        return f"returned {method(*args)!r}"
    except Exception as exc:
        return f"raised {type(exc).__name__}: {exc}"


def ordering_source() -> Source:
    """Where the two threads meet: mori's cleanup fires `cleanup_room_tracking.after_get`
    right after it fetched the live set; `StatusThreadCleanup` parks it there; the handler
    fires `node_failure.after_room` after each room, where the scenario (`_observe`)
    releases it once."""
    return source(ManagerBase._cleanup_room_tracking, StatusThreadCleanup, scenario._observe)
