"""Wrong fix: restart a loop that raised, quietly, with a counter but no log.

Tempting: the loop recovers by itself, so logging every restart looks like noise, and
`loop_restarts` already counts them for a metrics endpoint. Wrong: the exception and
its traceback are lost: a loop that breaks on every round restarts for ever with
nobody told why, and the first sign is a latency graph. Breaks hardened item "log with
traceback" (each restart logs the exception with its traceback).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import reference.hardened
from reference.common.supervise import FIRST_BACKOFF, MAX_BACKOFF
from reference.hardened import BootstrapServer, KVManager, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


async def quietly_supervised(body: Callable[[], Awaitable[None]], restarts: dict[str, int]) -> None:
    name, backoff = getattr(body, "__name__", repr(body)), FIRST_BACKOFF
    while True:
        try:
            await body()
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            restarts[name] = restarts.get(name, 0) + 1  # counted, never logged
        await asyncio.sleep(backoff)
        backoff = min(backoff * 2, MAX_BACKOFF)


class DPDispatcher(reference.hardened.DPDispatcher):
    def start(self) -> None:
        for body in (self._result_listener, self._worker_watchdog, self._cleanup_stale_mappings):
            task = asyncio.create_task(quietly_supervised(body, self.loop_restarts))
            self.background_tasks.add(task)
            task.add_done_callback(self.background_tasks.discard)
