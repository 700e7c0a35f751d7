"""Wrong fix: hold `connection_lock` across the whole loop, not only across the lookup.

Tempting: "iterating outside the lock" is the diagnosis, so iterate inside it; the
loop is short and the lock is already there. Wrong: the lock protects only against
writers that take it, and mori's `_cleanup_room_tracking` discards without it. The
set still changes size mid-iteration and the heartbeat dies, now while holding the
lock. Caught by the story and `every-affected-room-failed`.
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            affected_rooms = self.addr_to_rooms_tracker.get(addr, set())
            for room in affected_rooms:  # under the lock, but the racing writer takes none
                self._fail_lost_room(room, addr)
                self.hooks.fire("node_failure.after_room", addr, room)
            self.addr_to_rooms_tracker.pop(addr, None)
        self._disconnect(stale_endpoints)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
