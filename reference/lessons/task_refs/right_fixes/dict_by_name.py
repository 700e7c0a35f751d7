"""Right fix: a registry `{loop name: task}` made per instance, emptied by done callbacks.

Unlike the wrong fix `shared_by_name` (the registry declared on the class, shared by
every dispatcher), the dict is created in `__init__`: each component holds its own
loops strongly, by name, for `/health` or shutdown to find. Correct: one registry per
instance, alive as long as the component. A task's done callback
deletes its name only if the entry is still that task, so a loop restarted under the
same name is never dropped by its predecessor's callback.
"""

from __future__ import annotations

import asyncio
from typing import Any

from reference.fixed import BootstrapServer as _FixedServer
from reference.fixed import DPDispatcher as _FixedDispatcher
from reference.fixed import KVManager, KVReceiver


def _start_held(registry: dict[str, asyncio.Task], name: str, task: asyncio.Task) -> None:
    registry[name] = task

    def forget(done: asyncio.Task) -> None:
        if registry.get(name) is done:
            del registry[name]

    task.add_done_callback(forget)


class DPDispatcher(_FixedDispatcher):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.loops_by_name: dict[str, asyncio.Task] = {}

    def start(self) -> None:
        for body in (self._result_listener, self._worker_watchdog, self._cleanup_stale_mappings):
            _start_held(self.loops_by_name, body.__name__, asyncio.create_task(body()))


class BootstrapServer(_FixedServer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.loops_by_name: dict[str, asyncio.Task] = {}

    def _start_background_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        _start_held(self.loops_by_name, "cleanup", loop.create_task(self._cleanup_expired_entries()))


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
