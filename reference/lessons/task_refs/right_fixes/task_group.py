"""Right fix: the loops run in an `asyncio.TaskGroup`, owned by one task the component holds.

`start()` creates one owner task (held in `self._group_owner`) that opens a TaskGroup
and starts the loops in it. Correct: the group keeps a strong reference to each child until the
child is done, and the owner's frame keeps the group, so every loop is reachable for as
long as it runs; an ended loop leaves the group's set at once, and when every loop has
ended the owner returns and its done callback drops it. The owner is also what
`close()` cancels first, so the group cancels its children and nothing is left
pending. One difference from upstream's set, documented rather than hidden: a loop
that raises makes the group cancel its siblings (TaskGroup semantics), so no loop
outlives a broken one; lesson `supervised-loops` is about loops that raise, and this
variant does not claim it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from reference.fixed import BootstrapServer as _FixedServer
from reference.fixed import DPDispatcher as _FixedDispatcher
from reference.fixed import KVManager, KVReceiver


class DPDispatcher(_FixedDispatcher):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._group_owner: asyncio.Task | None = None

    def start(self) -> None:
        self._group_owner = asyncio.create_task(self._run_loops())
        self._group_owner.add_done_callback(self._drop_owner)

    async def _run_loops(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self._result_listener())
            group.create_task(self._worker_watchdog())
            group.create_task(self._cleanup_stale_mappings())

    def _drop_owner(self, task: asyncio.Task) -> None:
        if self._group_owner is task:
            self._group_owner = None

    async def close(self) -> None:
        owner = self._group_owner
        if owner is not None and not owner.done():
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)
        await super().close()


class BootstrapServer(_FixedServer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._group_owner: asyncio.Task | None = None

    def _start_background_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        self._group_owner = loop.create_task(self._run_cleanup())
        self._group_owner.add_done_callback(self._drop_owner)

    async def _run_cleanup(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self._cleanup_expired_entries())

    def _drop_owner(self, task: asyncio.Task) -> None:
        if self._group_owner is task:
            self._group_owner = None


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
