"""Right fix: each loop's task in an attribute of its own, reset to None when it ends.

`self.listener_task`, `self.watchdog_task`, `self.sweep_task` (and the server's
`self.cleanup_task`) hold the running loops strongly for the component's life; no
collection at all. Each task's done callback sets its attribute back to None, only if
it still names that task, so an ended or cancelled loop is let go. Correct: a strong
reference per running loop, none to an ended one, and instance attributes, so two
components never share a loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

from reference.fixed import BootstrapServer as _FixedServer
from reference.fixed import DPDispatcher as _FixedDispatcher
from reference.fixed import KVManager, KVReceiver


def _hold(owner: object, attribute: str, task: asyncio.Task) -> None:
    setattr(owner, attribute, task)

    def release(done: asyncio.Task) -> None:
        if getattr(owner, attribute, None) is done:
            setattr(owner, attribute, None)

    task.add_done_callback(release)


class DPDispatcher(_FixedDispatcher):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.listener_task: asyncio.Task | None = None
        self.watchdog_task: asyncio.Task | None = None
        self.sweep_task: asyncio.Task | None = None

    def start(self) -> None:
        _hold(self, "listener_task", asyncio.create_task(self._result_listener()))
        _hold(self, "watchdog_task", asyncio.create_task(self._worker_watchdog()))
        _hold(self, "sweep_task", asyncio.create_task(self._cleanup_stale_mappings()))


class BootstrapServer(_FixedServer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cleanup_task: asyncio.Task | None = None

    def _start_background_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        _hold(self, "cleanup_task", loop.create_task(self._cleanup_expired_entries()))


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
