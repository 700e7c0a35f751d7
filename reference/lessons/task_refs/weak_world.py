"""Worlds in which one of the DP dispatcher's loops is collectable, each changing one thing.

A bare background task is destroyed by `gc.collect()` only when nothing but its own
frame reaches what it awaits (`collectable.py`). The story makes the watchdog
collectable with an exit board that holds its waiters weakly. A fix must keep *every*
loop, so each check makes one more loop collectable the same honest way, by giving it
something to wait on that holds its waiter weakly, as an event bus does:

- `WeakReplyPool`: in-process workers whose replies are read from a `ReplyBoard` that
  holds its readers weakly (upstream: the result socket's selector reader holds the
  listener); the result listener then parks on an Event only its frame references;
- `WeakTimerLoop`: a `JumpLoop` whose `asyncio.sleep` timers hold the sleeping future
  weakly (a timer wheel that spares cancelling); the stale-mapping sweep, which
  sleeps between rounds, then parks on a future only its frame references.

Everything else is as upstream. `ExitNotices(hold_waiters=False)` (the story's) makes
the watchdog collectable. `started_tasks` finds the tasks a component started by
comparing the loop's tasks before and after, so checks hold weakrefs to them without
reading any private attribute of the variant. `young_heap()` makes each `gc.collect()`
of a check cost what the check's own objects cost.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from asyncio import futures
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from reference.aioloop import JumpLoop
from reference.transport.base import TransportError
from reference.transport.dp_base import Message
from reference.transport.dp_mock import MockWorkerPool

# What `asyncio.sleep` schedules on the loop's timer heap to wake its future (CPython 3.11-3.13).
_SLEEP_WAKE: Callable[..., None] = futures._set_result_unless_cancelled  # type: ignore[attr-defined]


class ReplyBoard:
    """Replies waiting for the result listener; its waiting readers held weakly."""

    def __init__(self) -> None:
        self._replies: deque[Message] = deque()
        self._waiters: weakref.WeakSet[asyncio.Event] = weakref.WeakSet()

    def put_nowait(self, reply: Message) -> None:
        self._replies.append(reply)
        for waiter in list(self._waiters):
            waiter.set()

    async def get(self) -> Message:
        while not self._replies:
            waiter = asyncio.Event()
            self._waiters.add(waiter)
            try:
                await waiter.wait()
            finally:
                self._waiters.discard(waiter)
        return self._replies.popleft()


class WeakReplyPool(MockWorkerPool):
    """`MockWorkerPool` whose replies go through a `ReplyBoard` instead of a Queue."""

    def __init__(self, size: int = 2, *, hold_exit_waiters: bool = True) -> None:
        super().__init__(size, hold_exit_waiters=hold_exit_waiters)
        self._board: ReplyBoard | None = None

    async def start(self) -> None:
        self._board = ReplyBoard()

    def _queue(self) -> ReplyBoard:  # type: ignore[override]
        if self._board is None:
            raise TransportError("worker pool not started")
        return self._board

    async def recv(self) -> Message:
        if self.recv_errors > 0:
            self.recv_errors -= 1
            raise TransportError("could not decode a reply frame")
        return await self._queue().get()


class WeakTimerLoop(JumpLoop):
    """A `JumpLoop` whose `asyncio.sleep` timers reach the sleeping future only weakly."""

    def call_at(  # type: ignore[override]
        self, when: float, callback: Callable[..., Any], *args: Any, context: Any = None
    ) -> asyncio.TimerHandle:
        if callback is _SLEEP_WAKE and args and isinstance(args[0], asyncio.Future):
            ref = weakref.ref(args[0])
            return super().call_at(when, _wake_if_alive, ref, *args[1:], context=context)
        return super().call_at(when, callback, *args, context=context)


def _wake_if_alive(ref: weakref.ref[asyncio.Future[Any]], result: Any) -> None:
    future = ref()
    if future is not None:
        _SLEEP_WAKE(future, result)


def task_refs(loop: asyncio.AbstractEventLoop) -> set[weakref.ref[asyncio.Task[Any]]]:
    """Weakrefs to the loop's pending tasks (strong references dropped at once)."""
    return {weakref.ref(task) for task in asyncio.all_tasks(loop) if not task.done()}


def started_tasks(
    before: set[weakref.ref[asyncio.Task[Any]]], after: set[weakref.ref[asyncio.Task[Any]]]
) -> list[weakref.ref[asyncio.Task[Any]]]:
    """The tasks in `after` that were not in `before` (weakrefs compare by referent)."""
    return [ref for ref in after if ref not in before]


def alive(refs: list[weakref.ref[asyncio.Task[Any]]]) -> list[str]:
    """Coroutine names of the tasks in `refs` that still exist."""
    names = []
    for ref in refs:
        task = ref()
        if task is not None:
            names.append(getattr(task.get_coro(), "__name__", task.get_name()))
        del task
    return sorted(names)


@contextmanager
def young_heap() -> Iterator[None]:
    """Freeze what exists now (`gc.freeze`) so that `gc.collect()` inside scans only
    what the check creates: ~0.1 s less per collection with torch and aiohttp imported.
    Frozen objects still count as referrers, so nothing they reach is collected."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
