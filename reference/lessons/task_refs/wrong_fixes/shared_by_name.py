"""Wrong fix: a registry of loops by name, declared on the class.

Tempting: a dict `{loop name: task}` lets `/health` and shutdown find each loop by
name, and re-registering a name on restart replaces the old task instead of piling up
references; declared at class level it reads like a dataclass field. Wrong: a class
attribute is shared by every instance, so a second dispatcher in the process (one per
encoder server, or a test that builds two) replaces the first one's entries, and the
first one's loops are held by nothing. Caught by `two-dispatchers-independent` (the
story, with one dispatcher, passes).
"""

import asyncio
from typing import ClassVar

from reference.fixed import BootstrapServer, KVManager, KVReceiver
from reference.fixed import DPDispatcher as _Fixed


class DPDispatcher(_Fixed):
    loops_by_name: ClassVar[dict[str, asyncio.Task]] = {}

    def start(self) -> None:
        for name, loop in (
            ("listener", self._result_listener),
            ("watchdog", self._worker_watchdog),
            ("sweep", self._cleanup_stale_mappings),
        ):
            task = asyncio.create_task(loop(), name=name)
            self.loops_by_name[name] = task
            task.add_done_callback(self._forget_loop)

    def _forget_loop(self, task: asyncio.Task) -> None:
        if self.loops_by_name.get(task.get_name()) is task:
            del self.loops_by_name[task.get_name()]


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
