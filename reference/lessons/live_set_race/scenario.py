"""Lesson `live-set-race` (PR #36351; sglang 0.5.19).

`_handle_node_failure` takes the set of rooms waiting on the failed prefill from
`addr_to_rooms_tracker` under `connection_lock`, pops it, and iterates it after the
lock is released. In the buggy form that is the live set object. A backend cleanup
that, like upstream mori's `_cleanup_room_tracking`, fetched the same set earlier and
discards from it without the lock, changes its size mid-iteration: the heartbeat
thread dies with `RuntimeError: Set changed size during iteration`, the rooms after
the first stay un-failed, and no later prefill failure is ever detected.

Deterministic order: the cleanup thread parks right after fetching the set (hook
`cleanup_room_tracking.after_get`); the heartbeat releases it after failing its first
room (hook `node_failure.after_room`) and waits for it to finish. The heartbeat runs
on a `VirtualClock`, so rounds happen exactly when the scenario advances time. On
`--transport loopback` the two prefills are real processes and the heartbeat probes
their real `/health` over HTTP; a kill is a SIGKILL.
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
from reference.lessons.live_set_race.checks import CHECKS
from reference.lessons.live_set_race.prefill_pair import two_prefills
from reference.lessons.live_set_race.stress import stress
from reference.sim.check import simulation_check
from reference.status import KVPoll

IN_FLIGHT, DONE, LATER = (1, 2, 3), 4, (5, 6)
CONFIG = ManagerConfig(heartbeat_interval=5.0, heartbeat_max_failures=2)
BOUND = 5.0  # real seconds any thread handshake may take


class StatusThreadCleanup:
    """Mori's decode-status thread: room DONE finished, so it cleans its tracking."""

    def __init__(self, manager, hooks: Hooks, room: int) -> None:
        self.parked, self.go = threading.Event(), threading.Event()
        hooks.set("cleanup_room_tracking.after_get", self._park)
        self.thread = threading.Thread(
            target=manager._cleanup_room_tracking, args=(room,), name="mori-status"
        )

    def _park(self, _room: int) -> None:
        self.parked.set()
        if not self.go.wait(BOUND):
            raise SettleTimeout("cleanup thread was never released")

    def start(self) -> None:
        self.thread.start()
        if not self.parked.wait(BOUND):
            raise SettleTimeout("cleanup thread never reached its hook")

    def release_once(self, _addr: str, _room: int) -> None:
        if not self.go.is_set():
            self.go.set()
            self.thread.join(BOUND)

    def stop(self) -> None:
        self.go.set()
        self.thread.join(BOUND)


def _setup(variant: ModuleType, transport, first: str, second: str):
    clock, hooks = VirtualClock(), Hooks()
    manager = variant.KVManager(transport, CONFIG, clock, hooks)
    for addr in (first, second):
        manager.add_prefill(addr)
    for room in (*IN_FLIGHT, DONE):
        manager.track_room(first, room)
    for room in LATER:
        manager.track_room(second, room)
    for room in IN_FLIGHT + LATER:
        manager.update_status(room, KVPoll.WaitingForInput)
    manager.update_status(DONE, KVPoll.Success)
    return clock, hooks, manager


def _failed(manager, rooms: tuple[int, ...]) -> int:
    return sum(manager.request_status.get(room) == KVPoll.Failed for room in rooms)


def observe(variant: ModuleType, options: Options) -> Observation:
    with two_prefills(options.transport) as pair:
        return _observe(variant, pair)


def _observe(variant: ModuleType, pair) -> Observation:
    (first_addr, second_addr), kill = pair.addrs, pair.kill
    clock, hooks, manager = _setup(variant, pair.transport, first_addr, second_addr)
    detect = CONFIG.heartbeat_interval * CONFIG.heartbeat_max_failures
    cleanup = StatusThreadCleanup(manager, hooks, DONE)
    timeline: list[Event] = []
    with thread_errors() as errors:
        manager.start_heartbeat()
        try:
            clock.wait_for_sleepers(1)
            cleanup.start()
            hooks.set("node_failure.after_room", cleanup.release_once)
            kill(first_addr)
            timeline.append(Event(clock.now(), "kill", first_addr))
            clock.advance(detect)
            first = _failed(manager, IN_FLIGHT)
            timeline.append(Event(clock.now(), "first-failure-handled", f"{first} rooms failed"))
            alive = manager.heartbeat_alive
            kill(second_addr)
            timeline.append(Event(clock.now(), "kill", second_addr))
            clock.advance(detect + CONFIG.heartbeat_interval)
            later = _failed(manager, LATER)
            timeline.append(Event(clock.now(), "second-failure-checked", f"{later} rooms failed"))
        finally:
            manager.close()
            cleanup.stop()
    return _verdict(errors.describe(), first, alive, later, timeline)


def _verdict(errors: str, first: int, alive: bool, later: int, timeline: list[Event]) -> Observation:
    details = {"first_failed": first, "heartbeat_alive": alive, "later_failed": later}
    problems = []
    if errors:
        problems.append(f"thread died: {errors}")
    if first < len(IN_FLIGHT):
        problems.append(f"failed {first} of {len(IN_FLIGHT)} affected rooms")
    if not alive:
        problems.append("heartbeat thread dead")
    if later < len(LATER):
        problems.append(f"2nd prefill failure undetected ({later} of {len(LATER)} rooms failed)")
    if problems:
        return Observation("bug", "; ".join(problems), timeline, details)
    return Observation(
        "ok",
        f"all {first} affected rooms failed; heartbeat alive; 2nd prefill failure detected",
        timeline,
        details,
    )


LESSON = Lesson(
    id="live-set-race",
    title="Iterating a live set outside its lock kills the heartbeat",
    upstream="PR #36351 (0.5.19)",
    needs=("KVManager", "KVManager._handle_node_failure"),
    body=observe,
    transports=("mock", "loopback"),
    stress=stress,
    checks=(*CHECKS, simulation_check("live-set-race"), *exploration_checks("live-set-race")),
)
