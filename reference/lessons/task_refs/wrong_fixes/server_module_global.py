"""Wrong fix: keep the bootstrap server's cleanup task in a module-level variable.

Tempting: a prefill process runs one bootstrap server, so one module global is all the
holding a single cleanup task needs, with no set and no callback. Wrong: nothing stops
a process from running two (a test, a multi-node launcher, a restart that builds the
new server before the old one is gone); the second server's task replaces the first
one's, whose cleanup is then held by nothing, and its `room_to_dp_rank` grows without
bound. Caught by `two-servers-independent` (the story passes).
"""

import asyncio

from reference.fixed import BootstrapServer as _Fixed
from reference.fixed import DPDispatcher, KVManager, KVReceiver

cleanup_task: asyncio.Task | None = None  # the prefill's one cleanup


class BootstrapServer(_Fixed):
    def _start_background_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        global cleanup_task
        cleanup_task = loop.create_task(self._cleanup_expired_entries())


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
