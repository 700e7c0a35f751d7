"""Wrong fix: add the bootstrap server's cleanup task to its set and never discard it.

Tempting: the cleanup runs for the life of the server, so a done callback that
discards it looks like dead code. Wrong: `close()` cancels it, and the cancelled task
(its frame, its CancelledError) then stays reachable from the closed server for as
long as anything holds the server: a leak per server, in a process that restarts its
bootstrap server. Caught by `closed-server-releases-task`.
"""

import asyncio

from reference.fixed import BootstrapServer as _Fixed
from reference.fixed import DPDispatcher, KVManager, KVReceiver


class BootstrapServer(_Fixed):
    def _start_background_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        self._background_tasks.add(loop.create_task(self._cleanup_expired_entries()))


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
