"""Right fix: the dispatcher restarts a loop from its task's done callback, not from a wrapper.

The hardened dispatcher runs each loop inside `supervised(...)`, a coroutine that
catches, logs and loops. Here each loop is a plain task; its done callback looks at how
it ended: cancelled (shutdown) or returned (on purpose): it stays ended; raised: the
exception is logged with its traceback, the restart counted, and a fresh task of the
same loop is scheduled after a back-off (`call_later`, 0.1 s doubling to 5 s per loop).
Every task, the restarted ones included, is held in `background_tasks` until it ends.
Correct: the same four rules as `supervised` (log, count, back off, run again;
cancellation and returns pass through), and the exception is retrieved by the callback,
so asyncio never reports it as "never retrieved". A restart pending at `close()` is
cancelled with the loops (`close` cancels the timer handles too).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import reference.hardened
from reference.common.supervise import FIRST_BACKOFF, MAX_BACKOFF
from reference.hardened import BootstrapServer, KVManager, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
log = logging.getLogger(__name__)
LoopBody = Callable[[], Coroutine[Any, Any, None]]


class DPDispatcher(reference.hardened.DPDispatcher):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._backoffs: dict[str, float] = {}
        self._pending_restarts: set[asyncio.TimerHandle] = set()

    def start(self) -> None:
        for body in (self._result_listener, self._worker_watchdog, self._cleanup_stale_mappings):
            self._launch(body)

    def _launch(self, body: LoopBody) -> None:
        task = asyncio.create_task(body())
        self.background_tasks.add(task)
        task.add_done_callback(self.background_tasks.discard)
        task.add_done_callback(lambda done: self._on_loop_end(body, done))

    def _on_loop_end(self, body: LoopBody, task: asyncio.Task) -> None:
        if task.cancelled() or task.exception() is None:
            return  # shutdown, or a loop that returned on purpose: it stays ended
        name = body.__name__
        exc = task.exception()
        backoff = self._backoffs.get(name, FIRST_BACKOFF)
        self._backoffs[name] = min(backoff * 2, MAX_BACKOFF)
        self.loop_restarts[name] = self.loop_restarts.get(name, 0) + 1
        log.error("background loop %s raised; restarting it in %.1f s", name, backoff, exc_info=exc)
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle

        def relaunch() -> None:
            self._pending_restarts.discard(handle)
            self._launch(body)

        handle = loop.call_later(backoff, relaunch)
        self._pending_restarts.add(handle)

    async def close(self) -> None:
        for handle in list(self._pending_restarts):
            handle.cancel()
        self._pending_restarts.clear()
        await super().close()
