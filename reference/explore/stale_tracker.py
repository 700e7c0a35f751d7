"""Exploration for lesson `stale-tracker` (residual of PR #36351): a late cleanup against a
failure and a re-registration.

Two threads and no hook points. Mori's decode-status thread cleans up room OLD, which
finished on the prefill (`_cleanup_room_tracking(OLD)`). Meanwhile the heartbeat declares
that prefill dead (`_handle_node_failure(addr)`: its tracker set is popped) and the
prefill, back behind the same address, gets a new request: its receiver tracks room NEW
under that address again, in a fresh set (here in one locked step, so the property is
about the cleanup alone, not about how a receiver inserts its set).

Property `late-cleanup-keeps-new-set` (HARDEN(stale-tracker)): whatever the interleaving,
the cleanup raises nothing and room NEW is still tracked under the address once both
threads are done, so the prefill's next failure fails it. A cleanup that checks its set
is the tracker's and pops the address later, with nothing held between, pops the new
set when the failure and the re-registration fall between the two.

Property `late-cleanup-keeps-reused-room` (HARDEN(stale-tracker)): the same cleanup of
OLD while the heartbeat fails the prefill and then a new request reuses the room id OLD
on it (once OLD's address mapping is gone, in one locked step). Whatever the
interleaving, nothing raises and the reused OLD is still tracked under the address at
the end. A cleanup that pops OLD's address and looks the set up later, outside the
lock, finds the new request's set, which passes its identity check, and discards the
reused room from it (a re-registration under a new room id cannot show this: the new
room is in its set by the time the cleanup's locked second step runs). The failure
thread is thread 0: frontrun's search finds that order only from there.

Property `late-cleanup-keeps-equal-set` (HARDEN(stale-tracker): the cleanup pops the address
only if the set it holds is still the one in the tracker): the same threads as
`late-cleanup-keeps-reused-room`, the cleanup as thread 0, so the search reaches the order
where its first locked step (address popped, set fetched) comes before the failure and its
second after the room id's reuse. The reused request's new set then holds exactly what the
old one held ({OLD}): a cleanup that asks whether its set is still the tracker's by
contents (`==`, not identity) takes the new set for its own and pops it. Whatever the
interleaving, nothing raises and the reused OLD is still tracked at the end. (frontrun's
search meets that order only from this thread order; from the other it meets the
wrong fix that looks its set up after its first step.)

Property `clear-keeps-reused-room` (HARDEN(stale-tracker)): the scheduler clears room
OLD (`clear(OLD)`) while a new request reuses the room id OLD on the same prefill: once
OLD's address mapping is gone (the old request's tracking is over) it tracks OLD there
again, in one locked step. Whatever the interleaving, nothing raises and, if the new
request registered, OLD is still tracked under the address at the end. A `clear` that
pops the address and looks the set up in two steps discards the new request's room when
the re-registration falls between them. (With the heartbeat's `_handle_node_failure`
in the second thread as well, hardened's `_fail_lost_room` raises KeyError when `clear`
pops the room's status between its membership test and its read: a race of its own,
left out of this property.)

Property `cleanup-untracks-finished-room` (HARDEN(stale-tracker)): mori's decode-status
thread cleans up room OLD, which finished, before the scheduler's `clear(OLD)` (one lane,
in that order), while a new request (room NEW) is tracked on the same prefill, in one
locked step into the set there. Whatever the interleaving, nothing raises, OLD is in no
tracker set at the end (the cleanup that pops OLD's address must discard it: `clear`
then finds no address and cannot) and NEW is still tracked. Upstream's cleanup (buggy,
fixed) tests its set empty and pops the address later, unlocked: NEW put in between is
popped with it.
"""

from __future__ import annotations

from types import ModuleType

from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.explore.property import Property, ThreadErrors
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

ADDR = "10.0.0.1:8998"
OLD, NEW = 1, 2


class World(ThreadErrors):
    def __init__(self, variant: ModuleType) -> None:
        super().__init__()
        self.manager = variant.KVManager(MockNetwork(), ManagerConfig(), VirtualClock())
        self.manager.add_prefill(ADDR)
        self.manager.track_room(ADDR, OLD)
        self.manager.update_status(OLD, KVPoll.Success)
        self.fresh: set[int] = {NEW}  # the re-registered prefill's set
        self.reused = False  # a new request took the room id OLD (clear-keeps-reused-room)


def mori_cleanup(world: World) -> None:
    world.manager._cleanup_room_tracking(OLD)


def failure_then_new_request(world: World) -> None:
    manager = world.manager
    manager._handle_node_failure(ADDR)
    with manager.connection_lock:  # the new receiver's tracking, put in as one locked step
        manager.room_to_bootstrap_addr[NEW] = ADDR
        manager.addr_to_rooms_tracker[ADDR] = world.fresh


def scheduler_clears(world: World) -> None:
    world.manager.clear(OLD)


def room_reused(world: World) -> None:
    manager = world.manager
    with manager.connection_lock:  # a new request on room id OLD, once the old one's tracking is over
        if manager.room_to_bootstrap_addr.get(OLD) is None:
            manager.room_to_bootstrap_addr[OLD] = ADDR
            manager.addr_to_rooms_tracker.setdefault(ADDR, set()).add(OLD)
            world.reused = True


def failure_then_room_reused(world: World) -> None:
    world.manager._handle_node_failure(ADDR)
    room_reused(world)


def cleanup_then_clear(world: World) -> None:
    world.manager._cleanup_room_tracking(OLD)
    world.manager.clear(OLD)


def new_request_tracked(world: World) -> None:
    manager = world.manager
    with manager.connection_lock:  # a receiver for NEW on the same prefill, in one locked step
        manager.room_to_bootstrap_addr[NEW] = ADDR
        manager.addr_to_rooms_tracker.setdefault(ADDR, set()).add(NEW)


def check_untracked(world: World) -> list[str]:
    problems = [f"thread died: {error}" for error in world.errors]
    tracker = world.manager.addr_to_rooms_tracker
    keeping = sorted(addr for addr, rooms in tracker.items() if OLD in rooms)
    if keeping:
        problems.append(f"finished room {OLD}, cleaned up and cleared, is still tracked under {keeping}")
    tracked = tracker.get(ADDR)
    if tracked is None or NEW not in tracked:
        shown = "no set" if tracked is None else f"a set without it ({sorted(tracked)})"
        problems.append(
            f"room {NEW} of a new request on the same prefill is tracked nowhere: {ADDR} has {shown}"
        )
    return problems


def check_reused(world: World) -> list[str]:
    problems = [f"thread died: {error}" for error in world.errors]
    tracked = world.manager.addr_to_rooms_tracker.get(ADDR)
    if world.reused and (tracked is None or OLD not in tracked):
        shown = "no set" if tracked is None else f"a set without it ({sorted(tracked)})"
        problems.append(f"room {OLD}, reused by a new request, is tracked nowhere: {ADDR} has {shown}")
    return problems


def check(world: World) -> list[str]:
    problems = [f"thread died: {error}" for error in world.errors]
    tracked = world.manager.addr_to_rooms_tracker.get(ADDR)
    if tracked is None or NEW not in tracked:
        shown = "no set" if tracked is None else f"a set without it ({sorted(tracked)})"
        problems.append(f"room {NEW} of the re-registered prefill is tracked nowhere: {ADDR} has {shown}")
    return problems


PROPERTIES = (
    Property(
        lesson="stale-tracker",
        id="late-cleanup-keeps-new-set",
        claim="a cleanup racing a failure and a re-registration never untracks the new prefill's room",
        needs=("KVManager", "KVManager._handle_node_failure", "KVManager._cleanup_room_tracking"),
        setup=World,
        workers=(("mori-cleanup", mori_cleanup), ("failure-new-request", failure_then_new_request)),
        check=check,
    ),
    Property(
        lesson="stale-tracker",
        id="late-cleanup-keeps-reused-room",
        claim="a cleanup racing a failure and the room id's reuse never untracks the new request's room",
        needs=("KVManager", "KVManager._handle_node_failure", "KVManager._cleanup_room_tracking"),
        setup=World,
        workers=(("failure-room-reused", failure_then_room_reused), ("mori-cleanup", mori_cleanup)),
        check=check_reused,
    ),
    Property(
        lesson="stale-tracker",
        id="late-cleanup-keeps-equal-set",
        claim="a cleanup that fetched its set before a failure never pops the equal set a new request "
        "re-tracking the same room id put there",
        needs=("KVManager", "KVManager._handle_node_failure", "KVManager._cleanup_room_tracking"),
        setup=World,
        workers=(("mori-cleanup", mori_cleanup), ("failure-room-reused", failure_then_room_reused)),
        check=check_reused,
    ),
    Property(
        lesson="stale-tracker",
        id="cleanup-untracks-finished-room",
        claim="a finished room's cleanup, then its clear, racing a new request on that prefill untracks "
        "the room and keeps the new one",
        needs=("KVManager", "KVManager._cleanup_room_tracking", "KVManager.clear"),
        setup=World,
        workers=(("mori-cleanup-clear", cleanup_then_clear), ("new-request", new_request_tracked)),
        check=check_untracked,
    ),
    Property(
        lesson="stale-tracker",
        id="clear-keeps-reused-room",
        claim="a clear racing the room id's reuse by a new request never untracks the new request's room",
        needs=("KVManager", "KVManager.clear"),
        setup=World,
        workers=(("scheduler-clear", scheduler_clears), ("room-reused", room_reused)),
        check=check_reused,
        hardened_only=True,  # buggy's and fixed's `clear` leaves the tracking alone
    ),
)
