"""What holding background tasks costs (lesson `task-refs`, PR #33048).

Upstream's fix replaces a bare `asyncio.create_task(coro)` with the pattern
`task = asyncio.create_task(coro); tasks.add(task); task.add_done_callback(tasks.discard)`
in the DP dispatcher and the bootstrap server. Both patterns are measured here on
plain asyncio, the way upstream writes them: a round spawns a batch of trivial tasks
and lets them finish, so the done callback that empties the set is part of the cost.
The bare form is "buggy" and the held form "fixed" in the report.

Upstream starts these tasks once per server, so the absolute cost only matters for
code that spawns a task per request; the ratio shows what the pattern adds per task.
The second benchmark times the real thing once: each variant's `DPDispatcher.start()`
(three loops) on the mock worker pool, until each loop reached its first await.
pytest-benchmark has no async support, hence `loop.run_until_complete` per round.
"""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.conftest import label
from benchmarks.modes import Mode
from reference.common.supervise import supervised
from reference.transport.dp_mock import MockWorkerPool


async def _trivial(counter: list[int]) -> None:
    counter[0] += 1


async def _let_tasks_finish() -> None:
    # One pass runs every trivial task; the next runs their done callbacks.
    await asyncio.sleep(0)
    await asyncio.sleep(0)


async def _spawn_bare(count: int, counter: list[int]) -> None:
    for _ in range(count):
        asyncio.create_task(_trivial(counter))  # noqa: RUF006 - the buggy pattern, on purpose
    await _let_tasks_finish()


async def _spawn_held(count: int, counter: list[int], tasks: set[asyncio.Task]) -> None:
    for _ in range(count):
        task = asyncio.create_task(_trivial(counter))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    await _let_tasks_finish()


async def _spawn_supervised(count: int, counter: list[int], tasks: set[asyncio.Task]) -> None:
    restarts: dict[str, int] = {}
    for _ in range(count):
        task = asyncio.create_task(supervised(lambda: _trivial(counter), restarts))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    await _let_tasks_finish()


SPAWN = {
    "bare": ("buggy", _spawn_bare),
    "held": ("fixed", _spawn_held),
    "supervised": ("hardened", _spawn_supervised),
}


@pytest.mark.parametrize("form", list(SPAWN))
def test_task_registration(benchmark, mode: Mode, form: str) -> None:
    loop = asyncio.new_event_loop()
    counter = [0]
    tasks: set[asyncio.Task] = set()

    variant, spawn = SPAWN[form]

    def one_round() -> None:
        if form == "bare":
            loop.run_until_complete(_spawn_bare(mode.task_batch, counter))
        else:
            loop.run_until_complete(spawn(mode.task_batch, counter, tasks))

    label(benchmark, "task registration/spawn+finish", variant, mode.task_batch, form=form)
    try:
        benchmark.pedantic(one_round, rounds=mode.rounds, warmup_rounds=1)
    finally:
        loop.close()
    assert counter[0] == mode.task_batch * (mode.rounds + 1), "every spawned task must have run"
    assert not tasks, "the done callbacks must have emptied the set"


def test_dispatcher_start(benchmark, variant, mode: Mode) -> None:
    name, module = variant
    loop = asyncio.new_event_loop()

    def setup():
        pool = MockWorkerPool(2)
        loop.run_until_complete(pool.start())
        return (module.DPDispatcher(pool),), {}

    async def start_loops(dispatcher) -> None:
        dispatcher.start()
        await asyncio.sleep(0)  # each loop runs to its first await

    def start(dispatcher) -> None:
        loop.run_until_complete(start_loops(dispatcher))

    def close(dispatcher) -> None:
        loop.run_until_complete(dispatcher.close())

    label(benchmark, "task registration/DPDispatcher.start() (3 loops)", name, 1)
    try:
        benchmark.pedantic(start, setup=setup, teardown=close, rounds=mode.rounds, warmup_rounds=1)
    finally:
        loop.close()
