"""Lesson `room-reuse` (residual: open after PR #24539; 0.5.23 closes part of it).

A `bootstrap_room` id can come back (a client that supplies its own, a retried
request). When request A on room R is aborted and cleared, and request B opens R
again, late writes that belong to A can still arrive: a duplicated abort of A (the
scheduler's AbortReq racing A's own failure) and A's transfer statuses from the
prefill, held up in the network. Upstream's status table is keyed by the room id
alone, so in the buggy and fixed forms those writes land on B: the late abort fails B
("Aborted by AbortReq.", though B was never aborted), and A's late Success statuses
then lift B's Failed back up to Success (`max`) before B has even sent its metadata,
with none of B's KV pages written.

The scenario (mock transport, virtual clock): A opens R, sends its metadata, its
statuses are delayed 60 s; A is aborted and cleared; B opens R (WaitingForInput); the
late abort of A lands, then the clock passes 60 s and A's statuses arrive; then B
sends its metadata and waits. `bug` when a late write changed B's status or left a
failure record for it, or when B ends anything but Success with its own bytes; `ok`
when B read WaitingForInput through all of it and then succeeded with verified bytes.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

from reference import wire
from reference.harness.lesson import Lesson, Options
from reference.harness.result import Event, Observation
from reference.lessons.failure_records.ending import end_with_failure
from reference.lessons.stale_bootstrap.world import TP_SIZE, World, open_world
from reference.sim.check import simulation_check
from reference.status import KVPoll

LATE = 60.0  # seconds A's statuses are held in the network


def _status(world: World, room: int) -> str:
    status = world.manager.request_status.get(room)
    return "absent" if status is None else KVPoll(status).name


def observe(variant: ModuleType, options: Options) -> Observation:
    room = random.Random(options.seed).randrange(1, 1 << 40)
    timeline: list[Event] = []
    with open_world(variant, "mock", sockets=options.sockets) as world:
        world.start()
        world.transport.delay(LATE, count=TP_SIZE, tag=wire.STATUS)
        first = variant.KVReceiver(world.manager, world.addr, room)
        first.init(0)
        first.send_metadata(world._pages())
        first.abort()
        end_with_failure(first)  # upstream's raises it, ours returns it
        timeline.append(Event(0, "A aborted and cleared", f"room {room}"))
        second = variant.KVReceiver(world.manager, world.addr, room)
        second.init(0)
        opened = _status(world, room)
        timeline.append(Event(1, "B opened the same room", opened))
        first.abort()  # a duplicated AbortReq for A, handled late
        after_abort = _status(world, room)
        record = world.manager.failure_records.get(room)
        timeline.append(Event(2, "late abort of A", f"B reads {after_abort}; failure record {record!r}"))
        world.clock.advance(LATE)
        world.pump()
        after_answers = _status(world, room)
        timeline.append(Event(2 + LATE, f"A's {TP_SIZE} late statuses", f"B reads {after_answers}"))
        outcome = _finish(world, second, room)
        details = {"opened": opened, "after_late_abort": after_abort, "failure_record": record,
                   "after_late_statuses": after_answers, **outcome, "sockets": options.sockets}  # fmt: skip
    return _verdict(details, timeline)


def _finish(world: World, receiver: Any, room: int) -> dict[str, Any]:
    """B goes on as the scheduler would: send its metadata (unless latched) and wait."""
    pages = world._pages()
    for region in range(world.memory.regions):
        world.memory.zero(region, pages)
    if receiver.poll() not in (KVPoll.Success, KVPoll.Failed):
        receiver.send_metadata(pages)
    status = world._wait(receiver)
    infos = list(receiver.bootstrap_infos or [])
    bytes_ok = world._bytes_ok(room, infos, pages) if status == KVPoll.Success else None
    reason = world.manager.failure_records.get(room)
    receiver.clear()
    return {"final": KVPoll(status).name, "bytes_ok": bytes_ok, "final_reason": reason}


def _verdict(d: dict[str, Any], timeline: list[Event]) -> Observation:
    problems = []
    if d["after_late_abort"] != d["opened"] or d["failure_record"] is not None:
        problems.append(
            f"a late abort of the room's previous request turned the new one {d['after_late_abort']} "
            f"(failure record {d['failure_record']!r})"
        )
    if d["after_late_statuses"] != d["opened"]:
        problems.append(
            f"{TP_SIZE} late transfer statuses of the previous request made the new one "
            f"{d['after_late_statuses']} before it had sent its metadata"
        )
    if d["final"] != "Success" or not d["bytes_ok"]:
        empty = " with its own KV pages never written" if d["final"] == "Success" else ""
        problems.append(f"the new request ended {d['final']}{empty}")
    if problems:
        return Observation("bug", "room id reused: " + "; ".join(problems), timeline, d)
    return Observation(
        "ok",
        f"room id reused: the late abort and {TP_SIZE} late statuses of the previous request never "
        f"reached the new one (it read {d['opened']} throughout), which then succeeded with verified bytes",
        timeline,
        d,
    )


LESSON = Lesson(
    id="room-reuse",
    title="Late statuses of a reused room id reach the new request",
    upstream="residual after PR #24539; 0.5.23's opening-status rule closes part of it",
    needs=("KVManager", "KVReceiver", "KVManager.try_ensure_parallel_info", "KVManager.listen"),
    body=observe,
    checks=(simulation_check("room-reuse"),),
)
