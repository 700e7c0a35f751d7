"""Bootstrap-server method with a bug to fix (a copy of reference/buggy/bootstrap_server.py).

- `_start_background_tasks`: lesson `task-refs` (upstream PR #33048)

Everything else (routes, thread, loop, the cleanup coroutine) is inherited from
`reference.common.bootstrap_server.BootstrapServerBase`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from reference.common.bootstrap_server import BootstrapServerBase


class BootstrapServer(BootstrapServerBase):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)

    def _start_background_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        # EXERCISE(task-refs): the same question as in dispatcher.py: who holds this task?
        loop.create_task(self._cleanup_expired_entries())
