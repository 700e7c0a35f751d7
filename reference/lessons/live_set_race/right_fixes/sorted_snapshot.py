"""Right fix: a `sorted(...)` snapshot taken under `connection_lock`, rooms failed in id order.

Correct: `sorted(s)` builds a new list from the set in one call, inside the lock, so the loop
iterates a private list and a concurrent discard on the live set cannot break it; the
order (room ids ascending) also makes the failure handler's log deterministic. Room ids
are ints, so sorting cannot raise.
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            affected_rooms = sorted(self.addr_to_rooms_tracker.get(addr, ()))
            self.addr_to_rooms_tracker.pop(addr, None)
        self._disconnect(stale_endpoints)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
