"""DP dispatcher method touched by an upstream fix.

- `start`: lesson `task-refs`, PR #33048 (first in sglang 0.5.19)

`reference/buggy/dispatcher.py` is the code before the fix, `reference/fixed/dispatcher.py`
after; their diff is exactly the fix. Everything else is in `common/dispatcher.py`.
"""

import asyncio

from reference.common.dispatcher import DispatcherBase
from reference.common.supervise import supervised  # HARDEN(supervised-loops)


class DPDispatcher(DispatcherBase):
    def __init__(self, *args, **kwargs) -> None:  # FIX(task-refs): the dispatcher owns its loops
        super().__init__(*args, **kwargs)
        self.background_tasks: set[asyncio.Task] = set()
        self.loop_restarts: dict[str, int] = {}  # HARDEN(supervised-loops): restarts per loop

    def start(self) -> None:
        loops = (
            self._result_listener,
            self._worker_watchdog,
            self._cleanup_stale_mappings,
        )  # HARDEN(supervised-loops)
        for loop_body in (supervised(body, self.loop_restarts) for body in loops):  # HARDEN(supervised-loops)
            task = asyncio.create_task(loop_body)  # FIX(task-refs): a strong reference until done
            self.background_tasks.add(task)
            task.add_done_callback(self.background_tasks.discard)
