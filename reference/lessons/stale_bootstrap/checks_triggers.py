"""Checks: the places PR #36029 invalidates that the simulation does not reach, on any variant.

`failure_recorded` fails a request each way the PR's hunks handle (a first fetch, a fetch
on CP rank 1 after rank 0 was filled, a registration on CP rank 1, a send, the waiting
timeout, a connect that raises for a registration or a send) and asks the same of each:
no cached key names a port of the process it failed on, and a request that failed has
its reason recorded and stays Failed. The send path needs fail-fast sockets: it is the
one place a send error goes through the receiver's `except` (upstream's own, with
`--sglang`), which the simulation's upstream runs, on upstream's sockets, never reach.
Receivers are driven only through the variant protocol.

A failure can be swallowed below the receiver (upstream's adapter, like ZMQ with
`IMMEDIATE=0`, never raises on a send): then the request ends on its waiting timeout
instead, and the symptom says that the path asked for was not taken. The verdict is
about the cache, whatever the request's end (Failed, or Success for a variant that
recovers by itself); a request that never ends, even past its timeout, is a bug, and so
is a transport error that escapes into the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from types import ModuleType
from typing import Any

from reference import wire
from reference.harness.options import Options
from reference.harness.result import Observation
from reference.lessons.stale_bootstrap.check_world import DONE, CheckWorld, Escaped, check_world, show
from reference.status import KVPoll

Body = Callable[[ModuleType, Options], Observation]


def judged(body: Body) -> Body:
    """A transport error escaping into the caller is itself the finding."""

    @wraps(body)
    def run(variant: ModuleType, options: Options) -> Observation:
        try:
            return body(variant, options)
        except Escaped as exc:
            return Observation(
                "bug", f"{exc} into the caller (the decode scheduler) instead of failing the request"
            )

    return run


def _ended(world: CheckWorld, receiver: Any, path: str, sent: bool = True) -> tuple[KVPoll, str]:
    """How the request ended: at once, or (the failure swallowed below the receiver, or the
    variant waiting for the prefill) after its waiting timeout; `path` is what was done to it."""
    status = KVPoll(receiver.poll())
    if status in DONE:
        return status, f"{path}: request {status.name} at once"
    if not sent:
        world.send(receiver)
    status = world.settle(receiver)
    return (
        status,
        f"{path}: request not ended at once (a failure swallowed, or a wait), {status.name} at "
        "its waiting timeout",
    )


def _fetch_failed(world: CheckWorld) -> tuple[Any, str, bool]:
    world.prefills[0].kill()
    return world.open(), "GET /route of a dead prefill failed", False


def _later_fetch_failed(world: CheckWorld) -> tuple[Any, str, bool]:
    """cp 0 is filled (fetched, registered, cached); the prefill dies as cp 1's route is fetched."""
    world.net.at("route", world.beside(world.prefills[0].kill), cp=1)
    return world.open(), "the prefill died as cp rank 1's route was fetched", False


def _registration_failed(world: CheckWorld) -> tuple[Any, str, bool]:
    """cp 0 is filled; cp 1's route names a port, then the prefill restarts: registering there fails."""
    world.net.at("route", world.beside(world.prefills[0].restart), cp=1, after=True)
    return world.open(), "registering with a restarted cp rank 1 failed (fail-fast sockets)", False


def _send_failed(world: CheckWorld) -> tuple[Any, str, bool]:
    world.request()
    world.prefills[0].restart()
    receiver = world.open()
    world.send(receiver)
    return receiver, "send_metadata to stale ports failed (fail-fast sockets)", True


def _timed_out(world: CheckWorld) -> tuple[Any, str, bool]:
    return _send_failed(world)[0], "metadata to stale ports vanished (upstream sockets)", True


def _answers_lost(world: CheckWorld) -> tuple[Any, str, bool]:
    """The metadata reaches the live prefill's rank; its answer is lost: the waiting timeout ends it."""
    world.request()
    world.net.drop(tag=wire.STATUS)
    receiver = world.open()
    world.send(receiver)
    return receiver, "its prefill's answer lost, the waiting timeout failed it", True


def _registration_connect_failed(world: CheckWorld) -> tuple[Any, str, bool]:
    world.net.refused.add(world.prefills[0].endpoints[0])
    return world.open(), "the connect for the registration raised (EMFILE)", False


def _send_connect_failed(world: CheckWorld) -> tuple[Any, str, bool]:
    world.request()
    world.net.refused.add(world.prefills[0].endpoints[0])
    receiver = world.open()
    world.send(receiver)
    return receiver, "the connect for send_metadata raised (EMFILE)", True


@dataclass(frozen=True)
class Way:
    """One way to fail a request: what fails it, on which sockets and CP size, whether the
    manager's own status must say Failed, and whether it must fail (a connect that keeps
    raising leaves no way to succeed; after a restart a variant may recover)."""

    make: Callable[[CheckWorld], tuple[Any, str, bool]]
    sockets: str = "upstream"
    cp: int = 1
    status_too: bool = True
    must_fail: bool = False


_WAYS = (  # (the lost answer first: on a release whose send to stale ports raises, it still runs)
    Way(_answers_lost),
    Way(_fetch_failed),
    Way(_later_fetch_failed, cp=2),
    Way(_registration_failed, "fail-fast", cp=2),
    Way(_send_failed, "fail-fast", status_too=False),  # the receiver's own latch may carry it alone
    Way(_timed_out),
    Way(_registration_connect_failed, must_fail=True),
    Way(_send_connect_failed, status_too=False, must_fail=True),
)


def _late_success(world: CheckWorld, receiver: Any) -> None:
    """A transfer status Success for the room arriving late (another rank's, or the
    prefill's after the decode gave up): what the decode's inbox writes."""
    world.manager.update_status(receiver.bootstrap_room, KVPoll.Success)


def _one_failure(variant: ModuleType, way: Way) -> str | None:
    """The problem ("" if none) of one way to fail; None if it found none and the receiver
    never took the call the failure was scripted at (cp rank 1's route)."""
    with check_world(variant, way.sockets, cp=way.cp) as world:
        failed_on = world.prefills[0].rank_ports  # the ports of the process it fails on
        receiver, path, sent = way.make(world)
        pending = bool(world.net.pending)
        problem = _judged_end(world, way, receiver, *_ended(world, receiver, path, sent=sent), failed_on)
    return None if pending and not problem else problem


def _judged_end(
    world: CheckWorld, way: Way, receiver: Any, status: KVPoll, how: str, failed_on: list[int]
) -> str:
    room = receiver.bootstrap_room
    record = world.manager.failure_records.get(room)
    kept = world.manager.request_status.get(room)
    if status not in DONE:
        return f"{how}: never ended"
    stale = world.stale(failed_on)
    if stale:
        return f"{how}, but connection_pool still caches the ports it failed on: {show(stale)}"
    if status != KVPoll.Failed:
        return f"{how}: a request that cannot reach its prefill did not fail" if way.must_fail else ""
    if not record:
        return f"{how}, with no failure record for room {room}"
    if way.status_too and (kept is None or KVPoll(int(kept)) != KVPoll.Failed):
        return f"{how}, but the manager's status of room {room} is {kept}"
    if not how.endswith(" at once"):  # 0.5.19's waiting timeout does not latch (0.5.23's does)
        return ""
    _late_success(world, receiver)
    after = KVPoll(receiver.poll())
    return f"{how}; then a late Success for the room turned it {after.name}" if after != status else ""


def _escaped_or_problem(variant: ModuleType, way: Way) -> str | None:
    try:
        return _one_failure(variant, way)
    except Escaped as exc:
        return f"{exc} into the caller (the decode scheduler) instead of failing the request"


def failure_recorded(variant: ModuleType, options: Options) -> Observation:
    """Each way PR #36029's paths fail a request leaves no cached entry naming a dead port,
    and the reason the scheduler reports (`failure_records`), and, where the failure is the
    room's own end, its status Failed in the manager (what the heartbeat and a late status
    read); a request its own failure path failed at once stays Failed when a late Success
    for its room arrives. A variant that recovers by itself (Success) passes the record
    and status part: they are about a request that fails."""
    found = [_escaped_or_problem(variant, way) for way in _WAYS]
    problems = [problem for problem in found if problem]
    if problems:
        return Observation("bug", "; ".join(problems))
    if None in found:
        return Observation("unknown", "the receiver never fetched cp rank 1's route")
    return Observation(
        "ok",
        f"{len(found)} ways to fail (a first and a later fetch, registration, send, waiting timeout after "
        "a send to stale ports or a lost answer, a connect raising for a registration and a send): no "
        "cached entry names a port it failed on, and each Failed with its reason recorded and kept Failed "
        "past a late Success, or recovered",
    )
