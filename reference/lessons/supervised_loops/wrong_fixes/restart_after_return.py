"""Wrong fix: restart a loop whenever it ends, whether it raised or returned.

Tempting: "a background loop must never end" sounds like the invariant, and one
`while True` around the body is simpler than telling a return from a raise. Wrong: a
loop that returns does so on purpose. The result listener gives up after 30 receive
errors in a row and marks the dispatcher failed (`/health` turns unhealthy, new
requests get 503); restarted, it listens again on the broken socket, fails 30 more
times, and its task never ends, so nothing lets it go. Breaks hardened item "a loop
that returns on purpose stays ended".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import reference.hardened
from reference.common.supervise import FIRST_BACKOFF, MAX_BACKOFF
from reference.hardened import BootstrapServer, KVManager, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
log = logging.getLogger(__name__)


async def forever(body: Callable[[], Awaitable[None]], restarts: dict[str, int]) -> None:
    name, backoff = getattr(body, "__name__", repr(body)), FIRST_BACKOFF
    while True:
        try:
            await body()  # the mistake: a return is restarted like a raise
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("background loop %s raised; restarting it in %.1f s", name, backoff)
        restarts[name] = restarts.get(name, 0) + 1
        await asyncio.sleep(backoff)
        backoff = min(backoff * 2, MAX_BACKOFF)


class DPDispatcher(reference.hardened.DPDispatcher):
    def start(self) -> None:
        for body in (self._result_listener, self._worker_watchdog, self._cleanup_stale_mappings):
            task = asyncio.create_task(forever(body, self.loop_restarts))
            self.background_tasks.add(task)
            task.add_done_callback(self.background_tasks.discard)
