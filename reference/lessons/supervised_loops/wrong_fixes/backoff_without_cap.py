"""Wrong fix: back off before each restart, doubling, with no cap.

Tempting: the longer a loop keeps failing, the less often it seems worth retrying, and a
cap is one more constant to choose. Wrong: the wait grows without bound: after 10
failures in a row a loop waits 51 s before it runs again, after 15 almost half an hour.
A loop whose fault has cleared (the exit reader back, the socket reconnected) stays
down all that time, and the watchdog misses every rank death meanwhile. Breaks hardened
item "back off 0.1 s doubling to 5 s" (the 5 s cap).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import reference.hardened
from reference.common.supervise import FIRST_BACKOFF
from reference.hardened import BootstrapServer, KVManager, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
log = logging.getLogger(__name__)


async def uncapped(body: Callable[[], Awaitable[None]], restarts: dict[str, int]) -> None:
    name, backoff = getattr(body, "__name__", repr(body)), FIRST_BACKOFF
    while True:
        try:
            await body()
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            restarts[name] = restarts.get(name, 0) + 1
            log.exception("background loop %s raised; restarting it in %.1f s", name, backoff)
        await asyncio.sleep(backoff)
        backoff *= 2  # the mistake: no cap


class DPDispatcher(reference.hardened.DPDispatcher):
    def start(self) -> None:
        for body in (self._result_listener, self._worker_watchdog, self._cleanup_stale_mappings):
            task = asyncio.create_task(uncapped(body, self.loop_restarts))
            self.background_tasks.add(task)
            task.add_done_callback(self.background_tasks.discard)
