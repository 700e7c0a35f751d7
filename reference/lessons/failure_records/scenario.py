"""Lesson `failure-records` (residual: open after PR #24539).

A decode runs for weeks; its manager's per-room state must be bounded by the requests
in flight, not by the requests ever served. PR #24539 stopped a late Failed from
re-creating a cleared room in `request_status`, but `abort()` records its reason
first, unconditionally: every late abort of a cleared room leaves one entry in
`failure_records` that nobody will ever pop.

The scenario (mock transport, virtual clock, upstream's heartbeat pruning the tracker
every 5 s): `CYCLES` requests, each opened on a fresh room and sent. Half end Failed
(aborted by the scheduler, then turned into its exception, `failure_exception`, which
clears it), half end Success (their transfer done, then `clear()`); each is then aborted
once more, late (an AbortReq that raced the request's own end). With no request
open at the end, every table upstream's manager keeps per room must be empty
(`request_status`, `failure_records`, `addr_to_rooms_tracker`, the response tables).
`bug` names each table that grew with the cycles and its size; `ok` when all are
empty. `room_to_bootstrap_addr` (mori's map, popped only by mori's cleanup, which
this scenario does not run) is reported but not judged.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

from reference.harness.deep import exploration_checks
from reference.harness.lesson import Lesson, Options
from reference.harness.result import Event, Observation
from reference.lessons.failure_records.ending import end_with_failure
from reference.lessons.stale_bootstrap.world import CONFIG, open_world
from reference.sim.check import simulation_check

CYCLES = 400
PRUNE_EVERY = 50  # cycles between heartbeat rounds (the heartbeat prunes cleared rooms)


def _sizes(manager: Any) -> dict[str, int]:
    return {
        "request_status": len(manager.request_status),
        "failure_records": len(manager.failure_records),
        "addr_to_rooms_tracker": sum(len(rooms) for rooms in manager.addr_to_rooms_tracker.values()),
        "required_prefill_response_num_table": len(manager.required_prefill_response_num_table),
        "prefill_response_tracker": len(manager.prefill_response_tracker),
    }


def _end(world: Any, receiver: Any, how: str) -> None:
    """End the request as upstream's scheduler does: Failed (aborted, then its exception,
    which clears it) or Success (its transfer done, then `clear()`)."""
    if how == "Failed":
        receiver.abort()
        end_with_failure(receiver)  # upstream's raises it, ours returns it
        return
    world._wait(receiver)
    receiver.clear()


def observe(variant: ModuleType, options: Options) -> Observation:
    rooms = random.Random(options.seed).sample(range(1, 1 << 40), CYCLES)
    timeline: list[Event] = []
    with open_world(variant, "mock", sockets=options.sockets) as world:
        world.start()
        for cycle, room in enumerate(rooms, 1):
            receiver = variant.KVReceiver(world.manager, world.addr, room)
            receiver.init(0)
            receiver.send_metadata(world._pages())
            _end(world, receiver, "Failed" if cycle % 2 else "Success")
            receiver.abort()  # late: the scheduler's AbortReq raced the request's end
            if cycle % PRUNE_EVERY == 0:
                world.clock.advance(CONFIG.heartbeat_interval)
                timeline.append(Event(cycle, f"{cycle} cycles", str(_sizes(world.manager))))
        world.clock.advance(CONFIG.heartbeat_interval)
        sizes = _sizes(world.manager)
        mori_map = len(world.manager.room_to_bootstrap_addr)
    details = {"cycles": CYCLES, "sizes": sizes, "room_to_bootstrap_addr (not judged)": mori_map,
               "sockets": options.sockets}  # fmt: skip
    grown = {name: size for name, size in sizes.items() if size}
    if grown:
        listed = ", ".join(f"{name} {size}" for name, size in grown.items())
        return Observation(
            "bug",
            f"after {CYCLES} requests, half ended Failed and half Success, each aborted late, with no "
            f"request open, manager state kept {listed} entries (late aborts: unbounded)",
            timeline,
            details,
        )
    return Observation(
        "ok",
        f"after {CYCLES} late aborts of ended requests (Failed and Success) every per-room table is empty",
        timeline,
        details,
    )


LESSON = Lesson(
    id="failure-records",
    title="Late aborts grow the manager's failure records without bound",
    upstream="residual after PR #24539",
    needs=("KVManager", "KVReceiver", "KVManager.try_ensure_parallel_info", "KVManager.listen"),
    body=observe,
    checks=(simulation_check("failure-records"), *exploration_checks("failure-records")),
)
