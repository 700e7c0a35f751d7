"""Lesson `supervised-loops` (residual: open after PR #33048).

PR #33048 keeps strong references to the DP dispatcher's three background loops, so the
garbage collector cannot take them. But a loop that *raises* still ends: its task is
done, the done callback drops it from `background_tasks` (3 -> 2), and the only trace
is asyncio's "Task exception was never retrieved" when the task is collected, without
a word at the time it happened. The component goes on without the loop: with the
worker watchdog gone, a worker that dies is never noticed and requests keep being
routed to it, each hanging until its 180 s timeout.

The scenario (mock worker pool, a `JumpLoop` with upstream's timeouts): the dispatcher
starts; the pool's exit reader breaks once (`ExitNotices.fail`, the fault: the
watchdog's `await exits.next()` raises); one second passes; rank 1 dies; four requests
are dispatched. `bug` when the watchdog did not come back (death unnoticed, requests
routed to the dead rank) or its exception was not logged with a traceback when it
happened; `ok` when it was logged and the loop restarted (with back-off) in time to
notice the death and route around it. The checklist (`checks.py`) holds the same rules
for every loop the dispatcher, the bootstrap server and the heartbeat start.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from reference.aioloop import JumpLoop, run_on_jump_loop
from reference.config import DispatcherConfig
from reference.harness.lesson import Lesson, Options
from reference.harness.loop_capture import loop_errors
from reference.harness.result import Event, Observation
from reference.lessons.supervised_loops.checks import CHECKS
from reference.transport.kits import kit

CONFIG = DispatcherConfig()
RANKS, DYING, WAVE = 2, 1, 4
FAULT = "exit reader: bad file descriptor"


@contextmanager
def logged_tracebacks() -> Iterator[list[logging.LogRecord]]:
    """Log records that carry a traceback, from any logger, for the duration."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.exc_info:
                records.append(record)

    handler, root = Keep(level=logging.ERROR), logging.getLogger()
    root.addHandler(handler)
    try:
        yield records
    finally:
        root.removeHandler(handler)


async def _scenario(variant: ModuleType, loop: JumpLoop) -> tuple[dict[str, Any], list[Event]]:
    pool = kit("mock").worker_pool(RANKS)
    dispatcher = variant.DPDispatcher(pool, CONFIG)
    timeline: list[Event] = []
    details: dict[str, Any] = {}
    with loop_errors(loop) as errors, logged_tracebacks() as logged:
        try:
            await pool.start()
            dispatcher.start()
            await loop.settle()
            before = sorted(dispatcher.loop_tasks())
            pool.exits.fail(RuntimeError(FAULT))
            await loop.settle()
            timeline.append(Event(0.0, "exit reader broke", f"loops {before}"))
            gc.collect()  # a dropped task that raised is reported only when collected
            await loop.advance(1.0)
            after = sorted(dispatcher.loop_tasks())
            timeline.append(Event(1.0, "one second later", f"loops {after}"))
            await pool.kill(DYING)
            await loop.settle()
            wave = [asyncio.create_task(dispatcher.dispatch(f"r{i}", req_id=f"r{i}")) for i in range(WAVE)]
            await loop.settle()
            routed = sum(dispatcher.req_id_to_rank.get(f"r{i}") == DYING for i in range(WAVE))
            noticed = DYING in dispatcher.dead_ranks
            timeline.append(Event(1.0, f"rank {DYING} died", f"noticed {noticed}; {routed} routed to it"))
            await loop.advance(CONFIG.req_timeout)
            codes = sorted(reply.code for reply in await asyncio.gather(*wave))
        finally:
            await dispatcher.close()
            await pool.close()
    details.update(
        loops_before=before, loops_after=after, death_noticed=noticed, routed_to_dead=routed,
        reply_codes=codes, logged=[r.getMessage() for r in logged if FAULT in _text(r)],
        never_retrieved=[r.message for r in errors.reports if "never retrieved" in r.message],
    )  # fmt: skip
    return details, timeline


def _text(record: logging.LogRecord) -> str:
    exc = record.exc_info[1] if record.exc_info else None
    return f"{record.getMessage()} {exc}"


def observe(variant: ModuleType, options: Options) -> Observation:
    details, timeline = run_on_jump_loop(lambda loop: _scenario(variant, loop))
    problems = []
    if "_worker_watchdog" not in details["loops_after"]:
        problems.append(
            f"the worker watchdog raised RuntimeError ({FAULT}) and was gone: loops "
            f"{len(details['loops_before'])} -> {len(details['loops_after'])}"
        )
    if not details["logged"]:
        trace = "; only trace: 'Task exception was never retrieved'" if details["never_retrieved"] else ""
        problems.append(f"no traceback logged when it raised{trace}")
    if not details["death_noticed"]:
        problems.append(
            f"rank {DYING}'s death went unnoticed: {details['routed_to_dead']} of {WAVE} new requests "
            f"routed to it hung until the {CONFIG.req_timeout:g} s timeout"
        )
    if problems:
        return Observation("bug", "; ".join(problems), timeline, details)
    return Observation(
        "ok",
        f"the watchdog's exception was logged with its traceback and the loop restarted after a back-off; "
        f"rank {DYING}'s death was noticed and all {WAVE} new requests went to rank 0",
        timeline,
        details,
    )


LESSON = Lesson(
    id="supervised-loops",
    title="A background loop that raises is silently gone",
    upstream="residual after PR #33048",
    needs=("DPDispatcher",),
    body=observe,
    checks=CHECKS,
)
