"""Lesson `task-refs` on the bootstrap server: its cleanup collected, room mappings grow.

Upstream's bootstrap server (in the prefill) remembers which DP rank serves each room
(`POST /register_dp_rank`) and runs `_cleanup_expired_entries` on its own loop thread:
every 120 s it drops entries older than 120 s, so an entry lives 120 to 240 s. Before
PR #33048 that task was created bare.

The configuration. A cleanup that sleeps is held by the loop's timer heap, so it is
not collectable and upstream's bug was latent (see `collectable.py`). As with the
dispatcher's `ExitNotices`, we change one honest thing: the cleanup waits for its
rounds on a `Metronome` (one shared timer for periodic jobs) that holds its waiters
weakly, as an event bus does. The loop's timer then reaches only the metronome, and a
waiting cleanup is parked on an `asyncio.Event` only its own frame references. Rounds
come every 120 s exactly as with the sleep; everything else is the server as upstream.

The run: the server on its own thread, with a `JumpLoop` as its event loop and the
loop's time as the table's clock, and "Task was destroyed but it is pending!" captured
on that loop. Once the cleanup is parked, `gc.collect()` runs on the server's thread.
Then, twice: register `ROOMS` rooms through the transport (in-process `table.handle`
on mock, real HTTP to 127.0.0.1 on loopback), jump the server's clock 250 s (past the
240 s an entry can live), count `room_to_dp_rank`.

- buggy: the cleanup is destroyed by `gc.collect()`; no round ever runs and the stale
  mappings grow with every batch (8, then 16), without bound;
- fixed: the cleanup survives; each jump brings a round that expires every entry (0, 0).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Coroutine
from types import ModuleType
from typing import Any, TypeVar

from reference.aioloop import JumpLoop, pending_tasks
from reference.common.cleanup_ticks import Metronome, Ticks
from reference.harness.loop_capture import loop_errors
from reference.harness.result import Event
from reference.lessons.task_refs.finding import Finding, destroyed_problem
from reference.transport.base import Transport
from reference.transport.kits import kit

T = TypeVar("T")
INTERVAL = TTL = 120.0  # upstream's cleanup interval and entry lifetime
JUMP = 250.0  # past the 240 s an entry lives at most
ROOMS, BATCHES = 8, 2
BOUND = 10.0  # real seconds for any call into the server's loop or over HTTP

CLEANUP = "_cleanup_expired_entries"


def on_server_loop(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on the server's loop thread and wait (bounded) for its result."""
    return asyncio.run_coroutine_threadsafe(coro, loop).result(BOUND)


async def _collect_garbage() -> list[str]:
    """`gc.collect()` on the server's thread; the tasks still pending there afterwards.

    On that thread the loop is between callbacks, as when a collection strikes in the
    prefill, and it reports a destroyed task from its own thread.
    """
    gc.collect()
    return pending_tasks(asyncio.get_running_loop(), exclude=asyncio.current_task())


class Run:
    def __init__(self, variant: ModuleType, transport: str, ticks: Ticks | None) -> None:
        self.loop, self.transport, self.ticks = JumpLoop(), transport, ticks
        self.start = self.loop.time()
        self.server = variant.BootstrapServer(
            "127.0.0.1", 0, cleanup_interval=INTERVAL, entry_ttl=TTL, now=self.loop.time,
            cleanup_ticks=ticks, loop=self.loop, listen=not kit(transport).in_process,
        )  # fmt: skip
        self.timeline: list[Event] = []
        self.details: dict[str, Any] = {"rooms_left": []}

    def note(self, what: str, detail: str = "") -> None:
        self.timeline.append(Event(round(self.loop.time() - self.start, 3), what, detail))

    def register(self, net: Transport, addr: str, batch: int) -> None:
        for i in range(ROOMS):
            reply = net.register_dp_rank(addr, batch * ROOMS + i, i % 2)
            if reply.status != 200:
                raise RuntimeError(f"POST /register_dp_rank answered {reply.status}: {reply.body}")
        self.note("rooms registered", f"{ROOMS} rooms via POST /register_dp_rank ({self.transport})")


def _drive(run: Run, net: Transport, addr: str) -> None:
    loop = run.loop
    on_server_loop(loop, loop.settle())  # the cleanup has parked, waiting for its first round
    alive = on_server_loop(loop, _collect_garbage())
    run.details["survived_gc"] = any(CLEANUP in name for name in alive)
    run.details["waiting_after_gc"] = getattr(run.ticks, "waiting", None)  # a Metronome's waiters
    run.note("gc.collect()", f"tasks alive on the server's loop: {alive}")
    for batch in range(BATCHES):
        run.register(net, addr, batch)
        on_server_loop(loop, loop.advance(JUMP))
        left = len(run.server.table.room_to_dp_rank)
        run.details["rooms_left"].append(left)
        run.note(
            f"+{JUMP:g} s", f"room_to_dp_rank: {left} entries, cleanup rounds: {run.server.cleanup_rounds}"
        )
    run.details["cleanup_rounds"] = run.server.cleanup_rounds
    run.details["beats"] = getattr(run.ticks, "beats", None)


def _finding(run: Run) -> Finding:
    d = run.details
    problems = []
    if d["destroyed"]:
        problems.append(destroyed_problem(d["destroyed"]))
    if any(d["rooms_left"]):
        growth = ", ".join(f"{n} after {JUMP * (i + 1):g} s" for i, n in enumerate(d["rooms_left"]))
        problems.append(
            f"stale room_to_dp_rank entries grow: {growth} (an entry should live at most "
            f"{INTERVAL + TTL:g} s; {d['cleanup_rounds']} cleanup rounds ran)"
        )
    fine = (
        f"cleanup survived gc.collect(); {d['cleanup_rounds']} rounds expired every room within "
        f"{JUMP:g} s ({ROOMS} registered before each jump, room_to_dp_rank: "
        f"{', '.join(map(str, d['rooms_left']))})"
    )
    return Finding("bootstrap server", problems, fine, d, run.timeline)


def observe(variant: ModuleType, transport: str) -> Finding:
    """The lesson's probe: the cleanup waits on a metronome that holds it weakly."""
    return probe(variant, transport, Metronome(INTERVAL, hold_waiters=False))


def probe(variant: ModuleType, transport: str, ticks: Ticks | None) -> Finding:
    """The run with any tick source (`SleepTicks(INTERVAL)`, or None for the server's own
    sleep: upstream's configuration)."""
    run = Run(variant, transport, ticks)
    try:
        with loop_errors(run.loop) as errors, kit(transport).serving(run.server) as (net, addr):
            _drive(run, net, addr)
    finally:
        if not run.loop.is_closed():  # the server closes its loop; not if it never started
            run.loop.close()
    run.details["destroyed"] = errors.destroyed()
    return _finding(run)
