"""Lesson `failed-resurrect` (PR #24539, the follow-up of #24522; sglang 0.5.12).

#24522 made a receiver's `abort()` write Failed into the manager's status table. When
that abort (or any asynchronous Failed: a timeout, a status thread) lands after the
request was cleared, the buggy `update_status` stores it for a room nobody will ever
clear again: the room comes back as Failed and `request_status` grows by one entry
with every late abort. The fixed form ignores a Failed write for an absent room.

The scenario runs rooms through their normal life (Bootstrapping, WaitingForInput,
sometimes Success), clears each, then delivers the late abort, and reads the table.
"""

from __future__ import annotations

import random
from types import ModuleType

from reference.harness.deep import exploration_checks
from reference.harness.lesson import Lesson, Options
from reference.harness.result import Event, Observation
from reference.lessons.failed_resurrect.checks import CHECKS
from reference.sim.check import simulation_check
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

ROOMS = 8


def late_abort(manager, room: int) -> None:
    """What `abort()` does to the manager since #24522: record, then write Failed. A
    manager with its own `late_abort` (upstream's: its `CommonKVReceiver.abort()`) does it."""
    own = getattr(manager, "late_abort", None)
    if own is not None:
        return own(room)
    manager.record_failure(room, "Aborted by AbortReq.")
    manager.update_status(room, KVPoll.Failed)


def _live_room_mismatch(manager, room: int, succeeded: bool) -> str | None:
    want = KVPoll.Success if succeeded else KVPoll.WaitingForInput
    got = manager.check_status(room)
    return None if got == want else f"live room {room} reads {KVPoll(got).name}, expected {want.name}"


def observe(variant: ModuleType, options: Options) -> Observation:
    rng = random.Random(options.seed)
    manager = variant.KVManager(MockNetwork())
    rooms = rng.sample(range(1, 1 << 20), ROOMS)
    timeline: list[Event] = []
    for step, room in enumerate(rooms):
        succeeded = rng.random() < 0.5
        manager.update_status(room, KVPoll.Bootstrapping)
        manager.update_status(room, KVPoll.WaitingForInput)
        if succeeded:
            manager.update_status(room, KVPoll.Success)
        mismatch = _live_room_mismatch(manager, room, succeeded)
        if mismatch:
            return Observation("bug", mismatch, timeline)
        manager.clear(room)
        timeline.append(Event(step, "clear", f"room {room}"))
        late_abort(manager, room)
        timeline.append(Event(step + 0.5, "late-abort", f"request_status={len(manager.request_status)}"))
    return _verdict(manager, rooms, timeline)


def _verdict(manager, rooms: list[int], timeline: list[Event]) -> Observation:
    back = [room for room in rooms if room in manager.request_status]
    sizes = [int(e.detail.split("=")[1]) for e in timeline if e.what == "late-abort"]
    details = {"resurrected": len(back), "sizes": sizes, "failure_records": len(manager.failure_records)}
    if back:
        return Observation(
            "bug",
            f"{len(back)} of {len(rooms)} cleared rooms came back as Failed; request_status grew "
            f"with every late abort ({' -> '.join(map(str, [0, *sizes]))})",
            timeline,
            details,
        )
    return Observation(
        "ok", f"all {len(rooms)} cleared rooms stayed cleared after late aborts", timeline, details
    )


LESSON = Lesson(
    id="failed-resurrect",
    title="A late Failed resurrects a cleared room",
    upstream="PR #24539 (0.5.12)",
    needs=("KVManager",),
    body=observe,
    checks=(*CHECKS, simulation_check("failed-resurrect"), *exploration_checks("failed-resurrect")),
)
