"""Wrong fix: keep the three tasks in a list, and attach a done callback to each.

Tempting: it reads like the asyncio documentation's advice ("save a reference to the
result of create_task"), and the done callback that logs a loop's exit looks like the
upstream pattern. Wrong: the list is a local of `start()` and dies when `start()`
returns; a callback is held *by* the task, it does not hold the task. Every loop that
waits on something holding it weakly is destroyed by `gc.collect()`. Caught by
the story and `two-dispatchers-independent`.
"""

import asyncio
import logging

from reference.fixed import BootstrapServer, KVManager, KVReceiver
from reference.fixed import DPDispatcher as _Fixed


def _log_exit(task: asyncio.Task) -> None:
    logging.getLogger(__name__).debug("background loop %s ended", task.get_name())


class DPDispatcher(_Fixed):
    def start(self) -> None:
        tasks = [
            asyncio.create_task(self._result_listener()),
            asyncio.create_task(self._worker_watchdog()),
            asyncio.create_task(self._cleanup_stale_mappings()),
        ]
        for task in tasks:
            task.add_done_callback(_log_exit)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
