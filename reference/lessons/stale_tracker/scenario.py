"""Lesson `stale-tracker` (residual: open after PR #36351, in releases with mori's cleanup).

Mori's `_cleanup_room_tracking(room)` (the decode-status thread, on Success or Failed)
pops the room's address, keeps a reference to `addr_to_rooms_tracker[addr]`, discards
the room from that set without `connection_lock` and pops `addr` if the set is empty.
PR #36351 made `_handle_node_failure` iterate a snapshot, which closes the crash of
lesson `live-set-race`, but not this: if the prefill failed in between (the handler
popped the old set) and registered again (a new receiver put a new set under the same
address), the cleanup empties its old set and pops the *new* one. The new prefill's
rooms are then tracked nowhere, and its next failure fails none of them: they wait in
WaitingForInput for the 300 s waiting timeout (or forever, if their metadata was never
sent, since the waiting timeout only starts with it).

The scenario (mock transport, virtual clock, hooks): room OLD waits on prefill P; its
cleanup fetches the tracker set and parks (hook `cleanup_room_tracking.after_get`); P
stops answering `/health` and the heartbeat fails OLD; P comes back, `GET /route` is
answered again and room NEW is opened on it; the cleanup is released; P fails a second
time. `bug` when NEW is not Failed after the second failure (naming where it was lost);
`ok` when it is.
"""

from __future__ import annotations

import threading
from types import ModuleType

from reference.clock import SettleTimeout, VirtualClock
from reference.config import ManagerConfig
from reference.harness.capture import thread_errors
from reference.harness.deep import exploration_checks
from reference.harness.lesson import Lesson, Options
from reference.harness.result import Event, Observation
from reference.hooks import Hooks
from reference.sim.check import simulation_check
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

ADDR, OLD, NEW = "10.0.0.1:8998", 101, 202
CONFIG = ManagerConfig(heartbeat_interval=5.0, heartbeat_max_failures=2)
DETECT = CONFIG.heartbeat_interval * CONFIG.heartbeat_max_failures
BOUND = 5.0  # real seconds a thread handshake may take


class ParkedCleanup:
    """Mori's decode-status thread cleaning OLD, parked right after it fetched the set."""

    def __init__(self, manager, hooks: Hooks) -> None:
        self.parked, self.go = threading.Event(), threading.Event()
        hooks.set("cleanup_room_tracking.after_get", self._park)
        self.thread = threading.Thread(target=manager._cleanup_room_tracking, args=(OLD,), name="mori-status")

    def _park(self, _room: int) -> None:
        self.parked.set()
        if not self.go.wait(BOUND):
            raise SettleTimeout("cleanup thread was never released")

    def start(self) -> None:
        self.thread.start()
        if not self.parked.wait(BOUND):
            raise SettleTimeout("cleanup thread never reached its hook")

    def finish(self) -> None:
        self.go.set()
        self.thread.join(BOUND)


def observe(variant: ModuleType, options: Options) -> Observation:
    clock, hooks, net = VirtualClock(), Hooks(), MockNetwork()
    net.add_prefill(ADDR)
    manager = variant.KVManager(net, CONFIG, clock, hooks)
    manager.add_prefill(ADDR)
    manager.track_room(ADDR, OLD)
    manager.update_status(OLD, KVPoll.WaitingForInput)
    timeline: list[Event] = []
    cleanup = ParkedCleanup(manager, hooks)
    with thread_errors() as errors:
        manager.start_heartbeat()
        try:
            clock.wait_for_sleepers(1)
            cleanup.start()
            net.kill(ADDR)
            clock.advance(DETECT)
            old = KVPoll(manager.request_status.get(OLD, KVPoll.Failed)).name
            timeline.append(Event(clock.now(), "first failure handled", f"room {OLD} {old}"))
            net.revive(ADDR)
            manager.add_prefill(ADDR)
            manager.track_room(ADDR, NEW)
            manager.update_status(NEW, KVPoll.WaitingForInput)
            timeline.append(Event(clock.now(), "prefill back", f"room {NEW} opened on it"))
            cleanup.finish()
            tracked = NEW in manager.addr_to_rooms_tracker.get(ADDR, ())
            timeline.append(Event(clock.now(), "old cleanup done", f"room {NEW} tracked: {tracked}"))
            net.kill(ADDR)
            clock.advance(DETECT + CONFIG.heartbeat_interval)
            new = KVPoll(manager.request_status[NEW]).name
            timeline.append(Event(clock.now(), "second failure handled", f"room {NEW} {new}"))
        finally:
            manager.close()
            cleanup.finish()
    details = {"old_after_first_failure": old, "new_tracked_after_cleanup": tracked,
               "new_after_second_failure": new, "thread_errors": errors.describe()}  # fmt: skip
    if new != "Failed":
        lost = "" if tracked else ": the old cleanup emptied and popped the new prefill's tracker set"
        return Observation(
            "bug",
            f"room {NEW} of the re-registered prefill was tracked nowhere{lost}; the prefill's second "
            f"failure left it {new} (only the waiting timeout can end it)",
            timeline,
            details,
        )
    return Observation(
        "ok",
        f"the old cleanup left the new tracker set alone; the prefill's second failure failed room {NEW}",
        timeline,
        details,
    )


LESSON = Lesson(
    id="stale-tracker",
    title="A cleanup's stale tracker reference drops a re-registered prefill's rooms",
    upstream="residual after PR #36351 (mori's helper, 0.5.19; gone in 0.5.20)",
    needs=("KVManager", "KVManager._handle_node_failure"),
    body=observe,
    checks=(simulation_check("stale-tracker"), *exploration_checks("stale-tracker")),
)
