"""Wrong fix: `clear()` drops the room's status and record, not its tracking.

Tempting: the heartbeat's success path already prunes cleared rooms from
`addr_to_rooms_tracker` (mooncake's pruning), so the tracker "cleans itself". Wrong:
the pruning runs only for a prefill that answers `/health`; rooms of a prefill that is
gone, or between heartbeats under load, stay tracked, and `room_to_bootstrap_addr`
(popped only by mori's cleanup) keeps one entry per request. Breaks hardened item 2
(`clear()` drops the room's tracking).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVManager(reference.hardened.KVManager):
    def clear(self, bootstrap_room: int) -> None:
        self.request_status.pop(bootstrap_room, None)
        self.receivers.pop(bootstrap_room, None)
        self.room_lifecycle.pop(bootstrap_room, None)
        self.awaiting_transfer.discard(bootstrap_room)
        with self.failure_lock:
            self.failure_records.pop(bootstrap_room, None)  # tracker and room_to_bootstrap_addr kept
