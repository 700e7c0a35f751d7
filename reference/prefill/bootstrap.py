"""The bootstrap server a loopback prefill process runs.

This is infrastructure, not a lesson variant: the lessons talk to it, they do not judge
it. It holds its cleanup task the way any correct server does (the `task-refs` fix), so
that editing `reference/buggy/` or `reference/fixed/` never changes the prefill that the
lessons' decode ranks reach.
"""

from __future__ import annotations

import asyncio
from typing import Any

from reference.common.bootstrap_server import BootstrapServerBase


class PrefillBootstrapServer(BootstrapServerBase):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._held: set[asyncio.Task] = set()

    def _start_background_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        task = loop.create_task(self._cleanup_expired_entries())
        self._held.add(task)
        task.add_done_callback(self._held.discard)
