"""Wrong fix: supervise the loop that was seen to fail, the watchdog, and no other.

Tempting: the incident was the watchdog's exit reader breaking; the listener and the
sweep have run for months without raising. Wrong: any loop can raise (the listener on
a malformed reply, the sweep on a clock error); unsupervised, the listener that
raises takes every pending and future request down to a 180 s timeout, and the sweep
that raises lets `req_id_to_rank` grow without bound. Breaks hardened item "each
background loop (the dispatcher's three ...) runs supervised".
"""

from __future__ import annotations

import asyncio

import reference.hardened
from reference.common.supervise import supervised
from reference.hardened import BootstrapServer, KVManager, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class DPDispatcher(reference.hardened.DPDispatcher):
    def start(self) -> None:
        bodies = (self._result_listener(), supervised(self._worker_watchdog, self.loop_restarts),
                  self._cleanup_stale_mappings())  # fmt: skip
        for body in bodies:
            task = asyncio.create_task(body)
            self.background_tasks.add(task)
            task.add_done_callback(self.background_tasks.discard)
