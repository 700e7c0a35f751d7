"""Explorations for lesson `live-set-race` (PR #36351): the heartbeat against the tracker's mutators.

Two threads and no hook points. The heartbeat thread declares the prefill dead and runs
`_handle_node_failure(addr)`. Meanwhile another thread changes what that prefill's
rooms are:

- `every-affected-room-failed` (the fix's claim): mori's decode-status thread cleans up
  a room of that prefill that finished (`_cleanup_room_tracking(room)`), which, as
  upstream, discards it from the tracker's live set without the lock. Whatever the
  interleaving, the failure handler raises nothing (an exception there ends the
  heartbeat thread for good) and every room still waiting on the dead prefill ends
  Failed. The finished room's status is already gone when its cleanup runs, so the race
  explored is the one the fix is about, the live set's iteration against its discard;
  on upstream from 0.5.20, where mori's cleanup is gone and the cleanup is
  `CommonKVReceiver.clear`, it is that clear's unlocked discard.
- `failure-vs-clear` (not claimed, a race no fix touches): the scheduler clears a
  finished room of that prefill (`clear(room)`: its status leaves the table) while the
  failure handler walks the rooms. A handler that checks `room in request_status` and
  then reads `request_status[room]` (upstream's, through `check_status`; ours in
  `_fail_lost_room`) raises KeyError when the clear lands in between, and the heartbeat
  thread ends. Reported, never judged.
"""

from __future__ import annotations

from types import ModuleType

from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.explore.property import Property, ThreadErrors
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

ADDR = "10.0.0.1:8998"
WAITING, DONE = (1, 2), 3


class World(ThreadErrors):
    def __init__(self, variant: ModuleType, done_status_kept: bool = False) -> None:
        super().__init__()
        self.manager = variant.KVManager(MockNetwork(), ManagerConfig(), VirtualClock())
        self.manager.add_prefill(ADDR)
        for room in (*WAITING, DONE):
            self.manager.track_room(ADDR, room)
        for room in WAITING:
            self.manager.update_status(room, KVPoll.WaitingForInput)
        self.manager.update_status(DONE, KVPoll.Success)
        if not done_status_kept:
            self.manager.request_status.pop(DONE, None)


def _world_done_kept(variant: ModuleType) -> World:
    return World(variant, done_status_kept=True)


def heartbeat(world: World) -> None:
    world.manager._handle_node_failure(ADDR)


def mori_cleanup(world: World) -> None:
    world.manager._cleanup_room_tracking(DONE)


def scheduler_clear(world: World) -> None:
    world.manager.clear(DONE)


def check(world: World) -> list[str]:
    problems = [f"thread died: {error}" for error in world.errors]
    status = world.manager.request_status
    unfailed = [room for room in WAITING if status.get(room) != KVPoll.Failed]
    if unfailed:
        problems.append(f"{len(WAITING) - len(unfailed)} of {len(WAITING)} waiting rooms failed")
    return problems


PROPERTIES = (
    Property(
        lesson="live-set-race",
        id="every-affected-room-failed",
        claim="the failure handler raises nothing and fails every room waiting on the dead prefill",
        needs=("KVManager", "KVManager._handle_node_failure", "KVManager._cleanup_room_tracking"),
        setup=World,
        workers=(("heartbeat", heartbeat), ("mori-cleanup", mori_cleanup)),
        check=check,
    ),
    Property(
        lesson="live-set-race",
        id="failure-vs-clear",
        claim="a finished room cleared while its prefill is failed: the failure handler raises nothing",
        needs=("KVManager", "KVManager._handle_node_failure", "KVManager.clear"),
        setup=_world_done_kept,
        workers=(("heartbeat", heartbeat), ("scheduler-clear", scheduler_clear)),
        check=check,
        claimed=False,
    ),
)
