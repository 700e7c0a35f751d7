"""An asyncio event loop whose clock a scenario moves forward: the async `VirtualClock`.

Upstream's DP dispatcher answers a stuck request after 180 s and sweeps stale mappings
every 45 s. Tests must not wait that out, and must not sleep to order events. Every
timer in asyncio (`sleep`, `wait_for`, `timeout`, `call_later`) reads `loop.time()`,
so a loop whose `time()` is wall time plus an offset lets `advance(180)` make those
timers due at once, while real I/O (ZMQ sockets, child-process sentinels) keeps
working in real time. `settle()` then runs the loop until nothing is ready and no
timer is due, so the consequences of an event have played out before we look.

`run_on_jump_loop` runs one coroutine on a fresh loop and fails, naming them, when
tasks are still pending at the end: a scenario or test must stop what it started.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from reference.clock import SettleTimeout

T = TypeVar("T")
SETTLE_ROUNDS = 10_000  # loop iterations before settle() gives up on a busy loop


class LeakedTasks(AssertionError):
    """A coroutine finished while tasks it started were still pending."""


class JumpLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        super().__init__()
        self._offset = 0.0

    def time(self) -> float:
        return super().time() + self._offset

    async def advance(self, seconds: float) -> None:
        """Let what is ready run, jump the clock, then let every timer that fell due run.

        Settling first matters: a task created just before `advance()` has not yet
        armed its timeouts, and arming them after the jump would move them too.
        """
        if seconds < 0:
            raise ValueError("time only moves forward")
        await self.settle()
        self._offset += seconds
        await self.settle()

    async def settle(self) -> None:
        """Yield until no callback is ready and no timer is due (bounded)."""
        for _ in range(SETTLE_ROUNDS):
            await asyncio.sleep(0)
            # `_ready` is the loop's queue of runnable callbacks: private, but stable in CPython.
            if not self._ready and not self._timer_due():  # type: ignore[attr-defined]
                return
        raise SettleTimeout(f"the loop was still busy after {SETTLE_ROUNDS} iterations")

    def _timer_due(self) -> bool:
        scheduled = self._scheduled  # type: ignore[attr-defined]
        return bool(scheduled) and scheduled[0].when() <= self.time()


def pending_tasks(loop: asyncio.AbstractEventLoop, *, exclude: asyncio.Task | None = None) -> list[str]:
    """Names (coroutine qualnames) of the loop's tasks that are not done."""
    return sorted(
        getattr(task.get_coro(), "__qualname__", task.get_name())
        for task in asyncio.all_tasks(loop)
        if not task.done() and task is not exclude
    )


def run_on_jump_loop(main: Callable[[JumpLoop], Awaitable[T]], loop: JumpLoop | None = None) -> T:
    """Run `main(loop)` on a fresh `JumpLoop` (or `loop`, which it closes); raise
    `LeakedTasks` if it left any."""
    loop = loop or JumpLoop()
    try:
        result = loop.run_until_complete(_as_coroutine(main(loop)))
        leaked = pending_tasks(loop)
        if leaked:
            _cancel_all(loop)
            raise LeakedTasks(f"tasks left pending: {leaked}")
        return result
    finally:
        _cancel_all(loop)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
