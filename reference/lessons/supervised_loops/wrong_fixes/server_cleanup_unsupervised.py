"""Wrong fix: the dispatcher's loops supervised, the bootstrap server's cleanup left bare.

Tempting: the lesson's scenario is the dispatcher, and the cleanup is a plain
sleep-and-prune loop that "cannot raise". Wrong: it can (a malformed entry, a clock
that goes backwards), and a cleanup that raised is dropped from the set like any
other: `room_to_dp_rank` grows without bound on a prefill that runs for weeks, with
only "Task exception was never retrieved" in the log. Breaks hardened item "each
background loop (... the bootstrap server's cleanup) runs supervised".
"""

from __future__ import annotations

import asyncio

import reference.hardened
from reference.hardened import DPDispatcher, KVManager, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class BootstrapServer(reference.hardened.BootstrapServer):
    def _start_background_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        task = loop.create_task(self._cleanup_expired_entries())  # held, but not supervised
        self._background_tasks.add(task)
        task.add_done_callback(self._background_tasks.discard)
