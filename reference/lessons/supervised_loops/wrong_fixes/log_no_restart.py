"""Wrong fix: log a loop's exception with its traceback, and let the loop end.

Tempting: the complaint was that a loop vanished *silently*; logging the traceback at
once (instead of asyncio's late "Task exception was never retrieved") makes the
failure visible to whoever reads the logs, and a restart could mask a real bug.
Wrong: visible is not running. The watchdog is still gone after its first error,
every later rank death goes unnoticed and requests routed to the dead rank hang until
the 180 s timeout. Breaks hardened item "run again" (log, then restart the loop).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import reference.hardened
from reference.hardened import BootstrapServer, KVManager, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
log = logging.getLogger(__name__)


async def logged(body: Callable[[], Awaitable[None]]) -> None:
    try:
        await body()
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("background loop %s raised", getattr(body, "__name__", body))  # and ends


class DPDispatcher(reference.hardened.DPDispatcher):
    def start(self) -> None:
        for body in (self._result_listener, self._worker_watchdog, self._cleanup_stale_mappings):
            task = asyncio.create_task(logged(body))
            self.background_tasks.add(task)
            task.add_done_callback(self.background_tasks.discard)
