"""Wrong fix: guard the late write in `abort()`, where PR #24522 introduced it.

Tempting: the bug appeared with #24522's `abort()` writing Failed, so checking that
the room still exists right there looks like the targeted fix. Wrong: abort is one
writer among many: a waiting timeout, a transfer thread or a node failure write
Failed through `update_status` too, and each still re-creates a cleared room.
Caught by the story and `late-failed-never-recreates` (they write through
`update_status`, as every writer does).
"""

from reference.buggy import KVManager as _Buggy
from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    update_status = _Buggy.update_status  # the write itself as before the fix

    def abort(self, bootstrap_room: int) -> None:
        if bootstrap_room in self.request_status:
            super().abort(bootstrap_room)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
