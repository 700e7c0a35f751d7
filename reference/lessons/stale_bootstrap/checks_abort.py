"""Checks: a request its waiting timeout failed tells each of its prefill ranks, once;
an aborted request stays Failed.

PR #36029's `_check_waiting_timeout` hunk fails the request, invalidates its cache
entries and then (as before it) notifies the prefill: an `ABORT` for the room to every
rank the receiver bootstrapped from, once (`abort_notified`), so a rank that still holds
the room's metadata drops it. `abort_reaches_prefill` asks it of a request whose answers
are lost (two ranks), then of two aborts after it and two in flight (a variant may tell
none there: our variants' `abort()` records and fails the room, as #24522 wrote it, and
tells the prefill nothing). `aborted_stays_failed`: an aborted request's failure is in the
manager (a reason recorded, Failed in the status table), and it reads Failed, a late
Success for its room notwithstanding. What each rank was told is counted where the mock
network delivers to it (`ScriptedNetwork.aborts`).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from reference import wire
from reference.harness.options import Options
from reference.harness.result import Observation
from reference.lessons.stale_bootstrap.check_world import CONFIG, CheckWorld, check_world
from reference.lessons.stale_bootstrap.checks_triggers import judged
from reference.status import KVPoll

TP = 2


def _in_flight(world: CheckWorld) -> Any:
    """A request whose metadata reached both ranks and whose answers are lost."""
    world.net.drop(count=TP, tag=wire.STATUS)
    receiver = world.open()
    world.send(receiver)
    return receiver


def _told(world: CheckWorld, room: int) -> dict[str, int]:
    """How many ABORTs for `room` each rank of the prefill got."""
    return {endpoint: world.net.aborts[(endpoint, room)] for endpoint in world.prefills[0].endpoints}


def _show(told: dict[str, int]) -> str:
    return ", ".join(f"{endpoint.removeprefix('tcp://')} {count}" for endpoint, count in told.items())


def _timed_out(world: CheckWorld) -> str:
    """The problem ("" if none) with a request its waiting timeout failed."""
    receiver = _in_flight(world)
    room = receiver.bootstrap_room
    early = KVPoll(receiver.poll())
    world.clock.advance(CONFIG.waiting_timeout)
    status = KVPoll(receiver.poll())
    if early != KVPoll.WaitingForInput or status != KVPoll.Failed:
        return f"room {room}: {early.name} while its answers were lost, {status.name} at its waiting timeout"
    told = _told(world, room)
    if any(count != 1 for count in told.values()):
        return f"room {room} failed on its waiting timeout; ABORTs per prefill rank: {_show(told)}"
    receiver.abort()
    receiver.abort()
    again = _told(world, room)
    receiver.clear()
    if again != told:
        return f"room {room}: two aborts after its waiting timeout told the ranks again ({_show(again)})"
    return ""


def _aborted(world: CheckWorld) -> str:
    """The problem ("" if none) with a request aborted twice while in flight."""
    receiver = _in_flight(world)
    room = receiver.bootstrap_room
    receiver.abort()
    receiver.abort()
    world.clock.advance(CONFIG.waiting_timeout)
    status = KVPoll(receiver.poll())
    told = _told(world, room)
    receiver.clear()
    if status != KVPoll.Failed:
        return f"room {room}: aborted twice in flight, then {status.name}"
    if any(count > 1 for count in told.values()):
        return f"room {room}: aborted twice in flight; ABORTs per prefill rank: {_show(told)}"
    return ""


@judged
def abort_reaches_prefill(variant: ModuleType, options: Options) -> Observation:
    with check_world(variant, "upstream", tp=TP) as world:
        problems = [problem for problem in (_timed_out(world), _aborted(world)) if problem]
        told = sum(world.net.aborts.values())
    if problems:
        return Observation("bug", "; ".join(problems))
    return Observation(
        "ok",
        f"a request failed by its waiting timeout told each of its {TP} prefill ranks once, later aborts "
        f"none again; a request aborted twice told each at most once ({told} ABORTs in all)",
    )


@judged
def aborted_stays_failed(variant: ModuleType, options: Options) -> Observation:
    """A request aborted in flight leaves its end in the manager, as PR #24522 made `abort()`
    do: a failure reason recorded for its room (what `failure_exception()` reports; its
    wording not asked) and Failed in the status table; and it reads Failed, even when a late
    Success for its room (a prefill rank that finished before it heard of the abort) lands
    between the abort and the scheduler's next poll, and at every poll after: the scheduler
    frees what an aborted request held."""
    with check_world(variant, "upstream", tp=TP) as world:
        receiver = _in_flight(world)
        room = receiver.bootstrap_room
        receiver.abort()
        recorded = room in world.manager.failure_records
        table = KVPoll(world.manager.check_status(room))
        world.manager.update_status(room, KVPoll.Success)  # what the decode's inbox writes
        seen = [KVPoll(receiver.poll()) for _ in range(2)]
        receiver.clear()
    problems = [] if recorded else ["no failure reason recorded"]
    if table != KVPoll.Failed:
        problems.append(f"the manager's table reads {table.name}")
    if seen != [KVPoll.Failed, KVPoll.Failed]:
        problems.append(f"after a late Success its polls read {', then '.join(s.name for s in seen)}")
    if problems:
        return Observation("bug", f"room {room} aborted in flight: {'; '.join(problems)}")
    return Observation(
        "ok",
        f"room {room} aborted in flight: its failure reason recorded, Failed in the manager's table, and "
        "read Failed, a late Success before its poll notwithstanding",
    )
