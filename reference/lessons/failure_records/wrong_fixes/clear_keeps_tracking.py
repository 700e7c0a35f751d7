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
        with self.connection_lock:
            addr = self.room_to_bootstrap_addr.get(bootstrap_room)
        super().clear(bootstrap_room)
        if addr is not None:  # the mistake: clear() as hardened's, minus its tracking lines
            with self.connection_lock:
                self.room_to_bootstrap_addr[bootstrap_room] = addr
                self.addr_to_rooms_tracker[addr].add(bootstrap_room)
