"""Right fix: tasks held in a list on the instance; each task's done callback removes it.

Correct: the list is made in `__init__`, so each dispatcher and each server has its own, and it
lives as long as the component: it holds every loop strongly while the loop runs. The
done callback `self._loops.remove` takes the task out when it ends (returns, raises or
is cancelled), so a finished loop is let go; `remove` finds it by identity first (a
task compares equal only to itself), and each task is added once, so it cannot raise.
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
        self._loops: list[asyncio.Task] = []

    def start(self) -> None:
        for body in (self._result_listener, self._worker_watchdog, self._cleanup_stale_mappings):
            task = asyncio.create_task(body())
            self._loops.append(task)
            task.add_done_callback(self._loops.remove)


class BootstrapServer(_FixedServer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loops: list[asyncio.Task] = []

    def _start_background_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        task = loop.create_task(self._cleanup_expired_entries())
        self._loops.append(task)
        task.add_done_callback(self._loops.remove)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
