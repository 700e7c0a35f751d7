"""Wrong fix: on `RuntimeError`, start the iteration over once.

Tempting: failing a room twice is harmless (`update_status` is idempotent for Failed),
so restarting the loop when the set changed looks both simple and complete, and the
story (one concurrent cleanup) passes. Wrong: the retry iterates the same live set and
races the next concurrent cleanup just like the first pass; with two status threads
finishing rooms, the second discard lands in the retry and the exception escapes and
ends the heartbeat. Caught by `every-affected-room-failed` (its two discards on one prefill).
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            affected_rooms = self.addr_to_rooms_tracker.get(addr, set())
            self.addr_to_rooms_tracker.pop(addr, None)
        self._disconnect(stale_endpoints)
        try:
            self._fail_each(affected_rooms, addr)
        except RuntimeError:  # the set changed under us: go over it again
            self._fail_each(affected_rooms, addr)

    def _fail_each(self, rooms: set[int], addr: str) -> None:
        for room in rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
