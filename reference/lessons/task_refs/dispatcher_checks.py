"""Checks of lesson `task-refs` on the DP dispatcher: each loop kept, ended loops let go.

Each check builds a dispatcher over in-process workers on a `JumpLoop` (upstream's
timeouts, 180 s, made instant), makes one loop collectable (`weak_world.py`), runs
`gc.collect()`, and then makes that loop's job observable through the variant protocol
(`dispatch`, `dead_ranks`, `req_id_to_rank`, `close`): a request answered, a dead rank
noticed, a stale mapping swept. "Task was destroyed but it is pending!" is read from the
loop's exception handler, as a log reader would see it. The holding set's life after
loops end is judged by weakrefs to the tasks the dispatcher started.
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


def listener_survives(variant: ModuleType, _transport: str) -> Observation:
    async def scenario(loop: JumpLoop) -> Observation:
        pool = WeakReplyPool(2)
        dispatcher = variant.DPDispatcher(pool, CONFIG)
        with loop_errors(loop) as errors:
            await pool.start()
            dispatcher.start()
            try:
                await _collect(loop)
                tasks = await _encode(loop, dispatcher, [f"enc-{i}" for i in range(4)])
                at_once = sum(task.done() for task in tasks)
                await loop.advance(CONFIG.req_timeout)
                codes = await _codes(tasks)
            finally:
                await dispatcher.close()
                await pool.close()
        problems = []
        if at_once < len(tasks):
            late = [code for code in codes if code != 200]
            problems.append(
                f"{len(tasks) - at_once} of {len(tasks)} encodes unanswered until the "
                f"{CONFIG.req_timeout:g} s timeout ({'/'.join(map(str, sorted(set(late))))})"
            )
        return _verdict(
            errors.destroyed(), problems, "result listener survived gc.collect(); 4 encodes answered"
        )

    return _run(scenario)


def watchdog_survives(variant: ModuleType, _transport: str) -> Observation:
    async def scenario(loop: JumpLoop) -> Observation:
        pool = MockWorkerPool(2, hold_exit_waiters=False)
        dispatcher = variant.DPDispatcher(pool, CONFIG)
        with loop_errors(loop) as errors:
            await pool.start()
            dispatcher.start()
            try:
                await _collect(loop)
                await pool.stall(1)
                tasks = await _encode(loop, dispatcher, ["w-0", "w-1"])
                await pool.kill(1)
                await loop.settle()
                noticed = 1 in dispatcher.dead_ranks
                fast = sum(task.done() for task in tasks)
                await loop.advance(CONFIG.req_timeout)
                await _codes(tasks)
            finally:
                await dispatcher.close()
                await pool.close()
        problems = [] if noticed else ["rank 1 died unnoticed"]
        if fast < len(tasks):
            problems.append(f"its in-flight request hung until the {CONFIG.req_timeout:g} s timeout")
        return _verdict(
            errors.destroyed(), problems, "watchdog survived gc.collect(); rank 1's death noticed at once"
        )

    return _run(scenario)


def sweep_survives(variant: ModuleType, _transport: str) -> Observation:
    async def scenario(loop: JumpLoop) -> Observation:
        pool = MockWorkerPool(2)
        dispatcher = variant.DPDispatcher(pool, CONFIG)
        with loop_errors(loop) as errors:
            await pool.start()
            dispatcher.start()
            try:
                await _codes(await _encode(loop, dispatcher, ["s-0", "s-1"]))  # kept for a /send
                await _collect(loop)
                wait = CONFIG.send_timeout + 2 * CONFIG.cleanup_interval
                await loop.advance(wait)
                left = len(dispatcher.req_id_to_rank)
            finally:
                await dispatcher.close()
                await pool.close()
        problems = []
        if left:
            problems.append(
                f"{left} mappings whose /send never came still kept after {wait:g} s "
                f"(ttl {CONFIG.send_timeout:g} s, a sweep every {CONFIG.cleanup_interval:g} s)"
            )
        return _verdict(
            errors.destroyed(), problems, "stale-mapping sweep survived gc.collect(); 2 mappings evicted"
        )

    return _run(scenario, WeakTimerLoop())


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
