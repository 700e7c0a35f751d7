"""Bootstrap-server method touched by an upstream fix.

- `_start_background_tasks`: lesson `task-refs`, PR #33048 (first in sglang 0.5.19)

`reference/buggy/bootstrap_server.py` is the code before the fix,
`reference/fixed/bootstrap_server.py` after; their diff is exactly the fix. Everything
else (routes, thread, loop, the cleanup coroutine) is in `common/bootstrap_server.py`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from reference.common.bootstrap_server import BootstrapServerBase
from reference.common.supervise import supervised  # HARDEN(supervised-loops)


class BootstrapServer(BootstrapServerBase):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._background_tasks: set[asyncio.Task] = set()  # FIX(task-refs): strong references
        self.loop_restarts: dict[str, int] = {}  # HARDEN(supervised-loops): restarts per loop

    def _start_background_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        cleanup = supervised(self._cleanup_expired_entries, self.loop_restarts)  # HARDEN(supervised-loops)
        task = loop.create_task(cleanup)  # HARDEN(supervised-loops): held until done, restarted on error
        self._background_tasks.add(task)
        task.add_done_callback(self._background_tasks.discard)
