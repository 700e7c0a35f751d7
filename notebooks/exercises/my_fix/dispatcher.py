"""DP dispatcher method with a bug to fix (a copy of reference/buggy/dispatcher.py).

- `start`: lesson `task-refs` (upstream PR #33048)

Everything else is inherited from `reference.common.dispatcher.DispatcherBase`.
"""

import asyncio

from reference.common.dispatcher import DispatcherBase


class DPDispatcher(DispatcherBase):
    def start(self) -> None:
        # EXERCISE(task-refs): who holds these three tasks once start() returns? The event
        # loop keeps only weak references to tasks (see the asyncio.create_task docs).
        asyncio.create_task(self._result_listener())
        asyncio.create_task(self._worker_watchdog())
        asyncio.create_task(self._cleanup_stale_mappings())
