"""Exploration for lesson `live-set-race` (PR #36351): the heartbeat against mori's cleanup.

Two threads and no hook points. The heartbeat thread declares the prefill dead and runs
`_handle_node_failure(addr)`; meanwhile mori's decode-status thread cleans up a room of
that prefill that just finished (`_cleanup_room_tracking(room)`), which, as upstream,
discards it from the tracker's live set without the lock.

Property `every-affected-room-failed`: whatever the interleaving, the failure handler
raises nothing (an exception there ends the heartbeat thread for good) and every room
that was still waiting on the dead prefill ends Failed. Any correct fix has both.
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
    def __init__(self, variant: ModuleType) -> None:
        super().__init__()
        self.manager = variant.KVManager(MockNetwork(), ManagerConfig(), VirtualClock())
        self.manager.add_prefill(ADDR)
        for room in (*WAITING, DONE):
            self.manager.track_room(ADDR, room)
        for room in WAITING:
            self.manager.update_status(room, KVPoll.WaitingForInput)
        self.manager.update_status(DONE, KVPoll.Success)


def heartbeat(world: World) -> None:
    world.manager._handle_node_failure(ADDR)


def mori_cleanup(world: World) -> None:
    world.manager._cleanup_room_tracking(DONE)


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
)
