"""Checks of lesson `task-refs` on the DP dispatcher: every loop kept, ended loops let go.

Each check builds dispatchers over in-process workers on a `JumpLoop` (upstream's
timeouts, 180 s, made instant). `two_dispatchers` makes all three loops collectable at
once (a reply board and an exit board that hold their waiters weakly, a timer loop that
does too: `weak_world.py`), runs `gc.collect()`, and makes each loop's job observable
through the variant protocol (`dispatch`, `dead_ranks`, `req_id_to_rank`, `close`): a
request answered, a dead rank noticed, a stale mapping swept. (The story makes the
watchdog alone collectable and asks that its in-flight requests fail fast.) "Task was
destroyed but it is pending!" is read from the loop's exception handler, as a log
reader would see it. The holding set's life after loops end is judged by weakrefs to
the tasks the dispatcher started.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Awaitable, Callable
from types import ModuleType

from reference.aioloop import JumpLoop, run_on_jump_loop
from reference.config import DispatcherConfig
from reference.harness.loop_capture import loop_errors
from reference.harness.result import Observation
from reference.lessons.task_refs.finding import destroyed_problem
from reference.lessons.task_refs.weak_world import (
    WeakReplyPool,
    WeakTimerLoop,
    alive,
    started_tasks,
    task_refs,
    young_heap,
)
from reference.transport.dp_mock import MockWorkerPool

CONFIG = DispatcherConfig()
BOUND = 10.0  # real seconds for anything the loop should finish at once


async def _collect(loop: JumpLoop) -> None:
    await loop.settle()
    gc.collect()
    await loop.settle()


async def _encode(loop: JumpLoop, dispatcher, names: list[str]) -> list[asyncio.Task]:
    tasks = [asyncio.create_task(dispatcher.dispatch(name, req_id=name)) for name in names]
    await loop.settle()
    return tasks


async def _codes(tasks: list[asyncio.Task]) -> list[int]:
    replies = await asyncio.wait_for(asyncio.gather(*tasks), BOUND)
    return [reply.code for reply in replies]


def _run(scenario: Callable[[JumpLoop], Awaitable[Observation]], loop: JumpLoop | None = None) -> Observation:
    with young_heap():
        return run_on_jump_loop(scenario, loop)


def _named(refs: list) -> list[tuple]:
    """(ref, coroutine name or "" when the task is gone) for each weakref."""
    return [(ref, alive([ref])[0] if ref() is not None else "") for ref in refs]


def _verdict(destroyed: list[str], problems: list[str], fine: str) -> Observation:
    found = ([destroyed_problem(destroyed)] if destroyed else []) + problems
    return Observation("bug", "; ".join(found)) if found else Observation("ok", fine)


def ended_loops_released(variant: ModuleType, _transport: str) -> Observation:
    async def scenario(loop: JumpLoop) -> Observation:
        pool = MockWorkerPool(2)
        pool.recv_errors = CONFIG.listener_max_errors  # the listener gives up: its loop ends
        dispatcher = variant.DPDispatcher(pool, CONFIG)
        with loop_errors(loop):
            await pool.start()
            before = task_refs(loop)
            dispatcher.start()
            await loop.settle()
            started = started_tasks(before, task_refs(loop))
            try:
                for _ in range(CONFIG.listener_max_errors + 1):  # its back-off sleeps, at most 1 s each
                    await loop.advance(1.0)
                await _collect(loop)
                ended = sum(ref() is None or ref().done() for ref in started)  # type: ignore[union-attr]
                held_after_end = [name for ref, name in _named(started) if name and ref().done()]  # type: ignore[union-attr]
            finally:
                await dispatcher.close()
                await pool.close()
            await _collect(loop)
            closed = alive(started)
        if not started or not ended:
            return Observation("unknown", f"no loop ended on its own ({len(started)} started)")
        problems = []
        if held_after_end:
            problems.append(f"a finished loop's task still held after it ended ({', '.join(held_after_end)})")
        if closed:
            problems.append(f"{len(closed)} task objects still held after close() ({', '.join(closed)})")
        if problems:
            return Observation("bug", "; ".join(problems) + ": the holding set never lets go (a leak)")
        return Observation(
            "ok",
            f"the finished listener and the {len(started) - ended} loops close() cancelled were released",
        )

    return _run(scenario)


def two_dispatchers(variant: ModuleType, _transport: str) -> Observation:
    async def scenario(loop: JumpLoop) -> Observation:
        pools = [WeakReplyPool(2, hold_exit_waiters=False) for _ in range(2)]
        first, second = (variant.DPDispatcher(pool, CONFIG) for pool in pools)
        problems: list[str] = []
        with loop_errors(loop) as errors:
            for pool, dispatcher in zip(pools, (first, second), strict=True):
                await pool.start()
                dispatcher.start()
            try:
                await _collect(loop)
                for label, dispatcher in (("first", first), ("second", second)):
                    if not all(t.done() for t in await _encode(loop, dispatcher, [f"{label}-a"])):
                        problems.append(f"the {label} dispatcher stopped answering once both ran")
                await first.close()
                await _collect(loop)
                answered = all(t.done() for t in await _encode(loop, second, ["after-close", "second-b"]))
                await pools[1].kill(1)
                await loop.settle()
                noticed = 1 in second.dead_ranks
                await loop.advance(CONFIG.req_timeout + CONFIG.send_timeout + 2 * CONFIG.cleanup_interval)
                swept = not second.req_id_to_rank
            finally:
                await first.close()
                await second.close()
                for pool in pools:
                    await pool.close()
        if not answered:
            problems.append("closing the first dispatcher left the second unanswering")
        if not noticed:
            problems.append("after the first was closed, the second missed a rank's death")
        if not swept:
            problems.append(f"the second kept {len(second.req_id_to_rank)} stale mappings: its sweep is gone")
        fine = "two dispatchers kept their own loops through gc.collect(); closing one left the other working"
        return _verdict(errors.destroyed(), problems, fine)

    return _run(scenario, WeakTimerLoop())
