"""Wrong fix: add each task to the dispatcher's set and never discard it.

Tempting: the three loops run for the life of the process, so the done callback
(`add_done_callback(set.discard)`) looks like dead code, one line saved. Wrong: loops
do end: the result listener gives up after repeated receive errors, and `close()`
cancels all three. Their task objects (with their frames and exceptions) then stay in
the set for as long as the dispatcher lives, and a restarted dispatcher loop adds more.
Caught by `ended-loops-released`.
"""

import asyncio

from reference.fixed import BootstrapServer, KVManager, KVReceiver
from reference.fixed import DPDispatcher as _Fixed


class DPDispatcher(_Fixed):
    def start(self) -> None:
        for body in (self._result_listener(), self._worker_watchdog(), self._cleanup_stale_mappings()):
            self.background_tasks.add(asyncio.create_task(body))  # held until the dispatcher dies


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
