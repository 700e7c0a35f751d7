"""Wrong fix: hold the tasks in a `weakref.WeakSet`, so finished ones need no discard.

Tempting: a WeakSet cleans itself up, so there is no done callback to forget and no
leak to worry about, and the dispatcher can still list and cancel its loops. Wrong: a
weak reference is exactly what the event loop already had; it keeps nothing alive, so
each loop is as collectable as with a bare `create_task`. Caught by the
story and `two-dispatchers-independent`.
"""

import asyncio
import weakref

from reference.fixed import BootstrapServer, KVManager, KVReceiver
from reference.fixed import DPDispatcher as _Fixed


class DPDispatcher(_Fixed):
    def start(self) -> None:
        self.loops: weakref.WeakSet[asyncio.Task] = weakref.WeakSet()
        for body in (self._result_listener(), self._worker_watchdog(), self._cleanup_stale_mappings()):
            self.loops.add(asyncio.create_task(body))


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
