"""Right fix: record a failure only for a room with an open lifecycle.

The hardened manager records a failure only while the room is in `request_status`.
Here the guard asks the lifecycle table instead (`room_lifecycle`, set when a request
opens the room, popped by `clear()`), and the check and the write are one step under
`failure_lock`. Correct: a room is open exactly while it has a lifecycle (both are set
on Bootstrapping and dropped by `clear()`), so a late abort of a cleared room records
nothing, and `clear()` still drops what an open room had recorded.
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVManager(reference.hardened.KVManager):
    def record_failure(self, bootstrap_room: int, reason: str) -> None:
        with self.failure_lock:
            if bootstrap_room in self.room_lifecycle:
                self.failure_records[bootstrap_room] = reason
