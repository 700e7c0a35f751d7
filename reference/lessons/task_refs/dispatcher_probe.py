"""Lesson `task-refs` on the DP dispatcher: its watchdog collected, a death unnoticed.

The configuration. Upstream's three loops wait on things the event loop holds (the
result socket's selector reader, the 45 s timer, the `add_reader` callbacks on worker
sentinels), so a bare task among them is not collectable and the bug was latent (see
`collectable.py`). We keep the listener and the sweep as upstream, and give the
watchdog the one honest change that makes the fix matter: the pool posts worker exits
to an `ExitNotices` board that holds its waiters weakly (an event bus that spares
subscribers an unsubscribe). The watchdog then parks on an `asyncio.Event` that only
its own frame references. Both transports use it: in-process workers post the exit
when killed; worker processes post it from the pool's sentinel reader, so on loopback
the death really is detected through the process sentinel.

The run, on a `JumpLoop` with upstream's 180 s timeouts: start the dispatcher, encode
one request per rank (each kept for its `/send`), `gc.collect()`, then rank 1 wedges,
takes two requests and dies. We look at once (one `settle()`, no time passing) and
after jumping past the request timeout:

- buggy: "Task was destroyed but it is pending!" for `_worker_watchdog`; the death goes
  unnoticed, the two in-flight requests hang until their 180 s timeout (504), new
  requests keep being routed to the dead rank and its mappings stay behind;
- fixed: the watchdog survives; the two requests fail fast with 503, new requests all
  go to rank 0, and rank 1's mappings are purged.
The listener and the sweep survive `gc.collect()` in both forms, as the table predicts.
"""

from __future__ import annotations

import asyncio
import gc
from types import ModuleType
from typing import Any

from reference.aioloop import JumpLoop, run_on_jump_loop
from reference.common.dispatcher import Reply
from reference.config import DispatcherConfig
from reference.harness.loop_capture import loop_errors
from reference.harness.result import Event
from reference.lessons.task_refs.finding import Finding, destroyed_problem
from reference.transport.kits import kit

CONFIG = DispatcherConfig()  # upstream's defaults; the JumpLoop makes 180 s instant
RANKS, DYING = 2, 1
WAVE = 4  # requests per wave: with least-pending routing, two of them land on rank 1
REAL_BOUND = 20.0  # real seconds for replies from live worker processes
LOOPS = ("_result_listener", "_worker_watchdog", "_cleanup_stale_mappings")


class Run:
    """One scenario run: the dispatcher, its pool, the loop, and what we saw."""

    def __init__(self, variant: ModuleType, transport: str, loop: JumpLoop) -> None:
        self.loop, self.start = loop, loop.time()
        self.pool = kit(transport).worker_pool(RANKS, hold_exit_waiters=False)
        self.dispatcher = variant.DPDispatcher(self.pool, CONFIG)
        self.timeline: list[Event] = []
        self.details: dict[str, Any] = {}

    def note(self, what: str, detail: str = "") -> None:
        self.timeline.append(Event(round(self.loop.time() - self.start, 3), what, detail))

    async def wave(self, prefix: str) -> dict[str, asyncio.Task[tuple[Reply, float]]]:
        """Send WAVE requests at once; return once each has its rank and rank 0 answered its own."""
        tasks = {f"{prefix}-{i}": asyncio.create_task(self._timed(f"{prefix}-{i}")) for i in range(WAVE)}
        await self.loop.settle()
        live = [t for rid, t in tasks.items() if self.rank_of(rid, DYING) != DYING]
        if live:
            await asyncio.wait(live, timeout=REAL_BOUND)
        return tasks

    async def _timed(self, req_id: str) -> tuple[Reply, float]:
        reply = await self.dispatcher.dispatch(req_id, req_id=req_id)
        return reply, self.loop.time()

    def rank_of(self, req_id: str, default: int) -> int:
        return self.dispatcher.req_id_to_rank.get(req_id, default)

    def collect_garbage(self) -> None:
        gc.collect()
        alive = set(self.dispatcher.loop_tasks())  # a fresh dict, dropped at once
        self.details["survived_gc"] = {name: name in alive for name in LOOPS}
        self.note("gc.collect()", f"loops alive: {sorted(alive)}")


async def _drive(run: Run) -> None:
    run.dispatcher.start()
    await run.loop.settle()
    first = await asyncio.wait_for(
        asyncio.gather(run.dispatcher.dispatch("a"), run.dispatcher.dispatch("b")), REAL_BOUND
    )
    run.note("encoded", f"ranks {sorted(r.rank for r in first if r.rank is not None)}, kept for /send")
    run.collect_garbage()
    await run.pool.stall(DYING)
    in_flight = await run.wave("in-flight")
    stuck = {rid: t for rid, t in in_flight.items() if run.rank_of(rid, -1) == DYING}
    killed_at = run.loop.time()
    await run.pool.kill(DYING)
    await run.loop.settle()
    run.note("rank died", f"rank {DYING}, dead ranks seen: {sorted(run.dispatcher.dead_ranks)}")
    run.details["death_noticed"] = DYING in run.dispatcher.dead_ranks
    run.details["failed_fast"] = sum(t.done() for t in stuck.values())
    later = await run.wave("later")
    run.details["routed_to_dead"] = sum(run.rank_of(rid, -1) == DYING for rid in later)
    run.details["stale_mappings"] = run.dispatcher.mappings_to(DYING)
    run.details["unread_exit_notices"] = run.pool.exits.unread
    await run.loop.advance(CONFIG.req_timeout)
    replies = await asyncio.wait_for(asyncio.gather(*stuck.values()), REAL_BOUND)
    run.details["stuck_answers"] = [(reply.code, round(at - killed_at, 1)) for reply, at in replies]
    run.note("in-flight answered", str(run.details["stuck_answers"]))
    await asyncio.wait_for(asyncio.gather(*later.values()), REAL_BOUND)


async def _scenario(variant: ModuleType, transport: str, loop: JumpLoop) -> Finding:
    run = Run(variant, transport, loop)
    with loop_errors(loop) as errors:
        try:
            await run.pool.start()
            await _drive(run)
        finally:
            await run.dispatcher.close()
            await run.pool.close()
    run.details["destroyed"] = errors.destroyed()
    return _finding(run)


def _finding(run: Run) -> Finding:
    d = run.details
    problems = []
    if d["destroyed"]:
        problems.append(destroyed_problem(d["destroyed"]))
    if not d["death_noticed"]:
        problems.append(f"rank {DYING} died unnoticed ({d['unread_exit_notices']} exit notice never read)")
    hung = [(code, s) for code, s in d["stuck_answers"] if code == 504]
    if hung:
        problems.append(
            f"{len(hung)} in-flight requests hung until the {CONFIG.req_timeout:g} s timeout (504)"
        )
    if d["routed_to_dead"]:
        problems.append(f"{d['routed_to_dead']} of {WAVE} new requests routed to the dead rank")
    if d["stale_mappings"]:
        problems.append(f"{d['stale_mappings']} stale mappings to the dead rank")
    codes = sorted({code for code, _ in d["stuck_answers"]})
    slowest = max((s for _, s in d["stuck_answers"]), default=0.0)
    fine = (
        f"watchdog survived gc.collect(); rank {DYING}'s death noticed at once: "
        f"{len(d['stuck_answers'])} in-flight requests failed fast ({'/'.join(map(str, codes))} "
        f"after {slowest:.1f} s), {WAVE} new requests all served by rank 0, its mappings purged"
    )
    return Finding("DP dispatcher", problems, fine, run.details, run.timeline)


def observe(variant: ModuleType, transport: str) -> Finding:
    return run_on_jump_loop(lambda loop: _scenario(variant, transport, loop))
