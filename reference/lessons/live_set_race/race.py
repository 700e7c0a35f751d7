"""A decode world for the `live-set-race` checks, and mori cleanups placed anywhere in the loop.

The story releases one mori cleanup after the failure handler's first room. A fix must
hold wherever the concurrent discard lands, so the checks place one or more parked
cleanups at any position: `Race.park(room, addr, at)` starts mori's
`_cleanup_room_tracking(room)` on its own thread and parks it right after it fetched
the live set (hook `cleanup_room_tracking.after_get`, told apart by thread because a
variant may pass the room or the address); the failure handler's `at`-th
`node_failure.after_room` for `addr` releases it and waits (bounded) for its discard.

Everything goes through the variant protocol: `track_room`, `update_status`,
`_cleanup_room_tracking`, `_handle_node_failure`, `request_status`,
`addr_to_rooms_tracker`, and the two hook points. `released_in_loop` says whether a
cleanup really ran inside the handler's loop, so a check can tell a race it placed
from one the variant never let it place.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from types import ModuleType

from reference.clock import Clock, SettleTimeout
from reference.config import ManagerConfig
from reference.hooks import Hooks
from reference.status import KVPoll

BOUND = 5.0  # real seconds a parked thread may wait for its release
JOIN_BOUND = 1.0  # real seconds the handler's hook waits for a released discard
IN_FLIGHT = (KVPoll.Bootstrapping, KVPoll.WaitingForInput, KVPoll.Transferring)


@dataclass
class Cleanup:
    room: int
    addr: str
    at: int
    thread: threading.Thread
    parked: threading.Event = field(default_factory=threading.Event)
    go: threading.Event = field(default_factory=threading.Event)
    released_in_loop: bool = False


class Race:
    """Parked mori cleanups, each released at a chosen position of the handler's loop."""

    def __init__(self, hooks: Hooks) -> None:
        self.cleanups: dict[threading.Thread, Cleanup] = {}
        self.fires: Counter[str] = Counter()
        hooks.set("cleanup_room_tracking.after_get", self._park)
        hooks.set("node_failure.after_room", self._after_room)

    def park(self, manager, room: int, addr: str, at: int) -> Cleanup:
        thread = threading.Thread(
            target=manager._cleanup_room_tracking, args=(room,), name=f"mori-status-{room}"
        )
        cleanup = Cleanup(room, addr, at, thread)
        self.cleanups[thread] = cleanup
        thread.start()
        if not cleanup.parked.wait(BOUND):
            cleanup.go.set()
            raise SettleTimeout(f"mori's cleanup of room {room} never fetched the tracker's set")
        return cleanup

    def _park(self, *_args: object) -> None:
        cleanup = self.cleanups.get(threading.current_thread())
        if cleanup is None or cleanup.go.is_set():
            return
        cleanup.parked.set()
        if not cleanup.go.wait(BOUND):
            raise SettleTimeout(f"mori's cleanup of room {cleanup.room} was never released")

    def _after_room(self, addr: str, _room: int) -> None:
        self.fires[addr] += 1
        for cleanup in self.cleanups.values():
            if cleanup.addr == addr and cleanup.at == self.fires[addr] and not cleanup.go.is_set():
                cleanup.released_in_loop = True
                cleanup.go.set()
                cleanup.thread.join(JOIN_BOUND)

    def finish(self) -> None:
        """Release what is still parked (its position never came) and join every cleanup."""
        for cleanup in self.cleanups.values():
            cleanup.go.set()
        for cleanup in self.cleanups.values():
            cleanup.thread.join(BOUND)

    def placed(self) -> int:
        return sum(c.released_in_loop for c in self.cleanups.values())


@dataclass
class Prefill:
    """One prefill's rooms: in flight (to be failed when it dies) and finished ones."""

    addr: str
    in_flight: list[int]
    succeeded: list[int]
    failed: list[int] = field(default_factory=list)  # concluded Failed before the prefill died


def build(variant: ModuleType, transport, sizes: dict[str, tuple[int, int, int]], clock: Clock | None = None):
    """A manager tracking, per prefill address, (in flight, succeeded, failed) rooms.

    In-flight rooms cycle through Bootstrapping, WaitingForInput and Transferring.
    Returns the hooks, the manager and one `Prefill` per address, in order."""
    hooks = Hooks()
    config = ManagerConfig(heartbeat_interval=5.0, heartbeat_max_failures=2)
    manager = variant.KVManager(transport, config, clock, hooks)
    prefills, room = [], 100
    for addr, (flying, done, failed) in sizes.items():
        manager.add_prefill(addr)
        prefill = Prefill(addr, [], [], [])
        for i in range(flying + done + failed):
            room += 1
            manager.track_room(addr, room)
            if i < flying:
                for status in IN_FLIGHT[1 : 1 + i % len(IN_FLIGHT)]:
                    manager.update_status(room, status)
                prefill.in_flight.append(room)
            elif i < flying + done:
                manager.update_status(room, KVPoll.WaitingForInput)
                manager.update_status(room, KVPoll.Success)
                prefill.succeeded.append(room)
            else:
                manager.update_status(room, KVPoll.Failed)
                prefill.failed.append(room)
        prefills.append(prefill)
    return hooks, manager, prefills


def status_of(manager, room: int) -> str:
    got = manager.request_status.get(room)
    return "absent" if got is None else KVPoll(int(got)).name


def not_failed(manager, prefill: Prefill) -> list[int]:
    return [room for room in prefill.in_flight if status_of(manager, room) != "Failed"]


def fail_on_thread(manager, addr: str) -> threading.Thread:
    """The heartbeat's call, on a thread of its own so that what it raises is a thread's death."""
    thread = threading.Thread(target=manager._handle_node_failure, args=(addr,), name="kv-heartbeat")
    thread.start()
    thread.join(BOUND * 2)
    return thread
