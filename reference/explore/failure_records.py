"""Exploration for lesson `failure-records` (residual of PR #24539): a late failure record
against `clear()`.

Two threads and no hook points. The scheduler ends a request: `clear(room)` forgets the
room and its failure record. Meanwhile a failure path that found the room open (a late
abort, a status thread's transfer failure, the heartbeat failing a lost room) records
its reason: `record_failure(room, reason)`.

Property `no-record-after-clear` (HARDEN(failure-records)): whatever the interleaving,
neither thread raises and, once both are done, the cleared room has no failure record.
A record stored after `clear()` is kept for ever (nobody clears the room again): one
entry per late failure, the unbounded growth the lesson's story counts. A guard that
checks the room is open and stores later, with `clear()` popping the status and the
record in between, leaves exactly that record.
"""

from __future__ import annotations

from types import ModuleType

from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.explore.property import Property, ThreadErrors
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

ROOMS = (9, 10)  # each thread ends one room and records a late failure for the other


class World(ThreadErrors):
    def __init__(self, variant: ModuleType) -> None:
        super().__init__()
        self.manager = variant.KVManager(MockNetwork(), ManagerConfig(), VirtualClock())
        for room in ROOMS:
            self.manager.update_status(room, KVPoll.Bootstrapping)
            self.manager.update_status(room, KVPoll.WaitingForInput)


def _record(world: World, room: int) -> None:
    world.manager.record_failure(room, "Aborted by AbortReq.")


def scheduler(world: World) -> None:
    """Records for room 9 (a failure path that found it open), then clears room 10."""
    _record(world, ROOMS[0])
    world.manager.clear(ROOMS[1])


def status_thread(world: World) -> None:
    """Clears room 9, then records a late failure for room 10."""
    world.manager.clear(ROOMS[0])
    _record(world, ROOMS[1])


def check(world: World) -> list[str]:
    problems = [f"thread died: {error}" for error in world.errors]
    records = world.manager.failure_records
    for room in ROOMS:
        if room in records:
            problems.append(
                f"cleared room {room} keeps a failure record ({records[room]!r}); {len(records)} in all"
            )
    return problems


PROPERTIES = (
    Property(
        lesson="failure-records",
        id="no-record-after-clear",
        claim="a failure recorded while clear(room) runs leaves no record for the cleared room",
        needs=("KVManager", "KVManager.record_failure", "KVManager.clear"),
        setup=World,
        workers=(("record-9-clear-10", scheduler), ("clear-9-record-10", status_thread)),
        check=check,
        bound=1,
    ),
)
