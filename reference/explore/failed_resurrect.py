"""Exploration for lesson `failed-resurrect` (PR #24539): `clear()` against a late Failed.

Two threads and no hook points. The scheduler thread ends a request: `clear(room)`
forgets it. Another thread (the heartbeat failing a lost room, a status thread, a late
abort) writes `update_status(room, Failed)` for the same room. Each thread notes in a
shared log when its step is done or starts, so the check knows their real order.

- `late-failed-after-clear` (what the fix claims): a Failed whose `update_status`
  starts after `clear()` returned never re-creates the room; the manager's table ends
  empty. Any correct fix has it.
- `atomic-against-clear` (not claimed, reported): the same with no order at all, a
  Failed that started while the room was still there. Upstream's fix checks
  `room not in request_status` and writes later, without a lock; a `clear()` that runs
  between the two lets the write re-create the room. A fix would need `clear()` and
  `update_status` to share a lock (or one atomic operation); upstream 0.5.12 to 0.5.19
  have neither, so our faithful fixed form shows it too.
"""

from __future__ import annotations

from types import ModuleType

from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.explore.property import Property, ThreadErrors
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

ROOM = 7


class World(ThreadErrors):
    def __init__(self, variant: ModuleType) -> None:
        super().__init__()
        self.log: list[str] = []
        self.manager = variant.KVManager(MockNetwork(), ManagerConfig(), VirtualClock())
        self.manager.update_status(ROOM, KVPoll.Bootstrapping)
        self.manager.update_status(ROOM, KVPoll.WaitingForInput)


def scheduler_clear(world: World) -> None:
    world.manager.clear(ROOM)
    world.log.append("cleared")


def late_failed(world: World) -> None:
    world.log.append("late-failed")
    world.manager.update_status(ROOM, KVPoll.Failed)


def _resurrected(world: World) -> list[str]:
    problems = [f"thread died: {error}" for error in world.errors]
    if ROOM in world.manager.request_status:
        status = KVPoll(world.manager.request_status[ROOM]).name
        entries = len(world.manager.request_status)
        problems.append(f"cleared room {ROOM} re-created as {status}; request_status={entries} entries")
    return problems


def check_late(world: World) -> list[str]:
    if world.log != ["cleared", "late-failed"]:
        return [f"thread died: {error}" for error in world.errors]  # overlapping: not this property's case
    return _resurrected(world)


WORKERS = (("scheduler-clear", scheduler_clear), ("late-failed", late_failed))
NEEDS = ("KVManager",)

PROPERTIES = (
    Property(
        lesson="failed-resurrect",
        id="late-failed-after-clear",
        claim="a Failed whose update_status starts after clear(room) returned never re-creates the room",
        needs=NEEDS,
        setup=World,
        workers=WORKERS,
        check=check_late,
    ),
    Property(
        lesson="failed-resurrect",
        id="atomic-against-clear",
        claim="a Failed racing clear() never re-creates the room (beyond PR #24539: needs a lock)",
        needs=NEEDS,
        setup=World,
        workers=WORKERS,
        check=_resurrected,
        claimed=False,
    ),
)
