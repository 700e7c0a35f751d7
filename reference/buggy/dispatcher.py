"""DP dispatcher method touched by an upstream fix.

- `start`: lesson `task-refs`, PR #33048 (first in sglang 0.5.19)

`reference/buggy/dispatcher.py` is the code before the fix, `reference/fixed/dispatcher.py`
after; their diff is exactly the fix. Everything else is in `common/dispatcher.py`.
"""

import asyncio

from reference.common.dispatcher import DispatcherBase


class DPDispatcher(DispatcherBase):
    def start(self) -> None:
        asyncio.create_task(self._result_listener())  # BUG(task-refs): only the loop's weak ref
        asyncio.create_task(self._worker_watchdog())  # BUG(task-refs): only the loop's weak ref
        asyncio.create_task(self._cleanup_stale_mappings())  # BUG(task-refs): only the loop's weak ref
