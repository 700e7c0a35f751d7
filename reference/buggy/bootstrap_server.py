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


class BootstrapServer(BootstrapServerBase):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)

    def _start_background_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.create_task(self._cleanup_expired_entries())  # BUG(task-refs): only the loop's weak set holds it
