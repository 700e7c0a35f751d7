"""Wrong fix: log and restart a loop that raised at once, with no back-off.

Tempting: the sooner the loop runs again, the fewer rank deaths or replies it misses,
and a sleep in an error path looks like lost time. Wrong: a loop that fails at once on
every run (its socket closed, a bad config) then spins: it restarts thousands of times
a second, burns a core, floods the log with tracebacks and starves the event loop that
serves requests. Breaks hardened item "back off" (0.1 s doubling to 5 s between
restarts).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import reference.hardened
from reference.hardened import BootstrapServer, KVManager, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
log = logging.getLogger(__name__)


async def spinning_supervised(body: Callable[[], Awaitable[None]], restarts: dict[str, int]) -> None:
    name = getattr(body, "__name__", repr(body))
    while True:
        try:
            await body()
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            restarts[name] = restarts.get(name, 0) + 1
            log.exception("background loop %s raised; restarting it now", name)
        await asyncio.sleep(0)  # the mistake: no back-off, only a yield


class DPDispatcher(reference.hardened.DPDispatcher):
    def start(self) -> None:
        for body in (self._result_listener, self._worker_watchdog, self._cleanup_stale_mappings):
            task = asyncio.create_task(spinning_supervised(body, self.loop_restarts))
            self.background_tasks.add(task)
            task.add_done_callback(self.background_tasks.discard)
