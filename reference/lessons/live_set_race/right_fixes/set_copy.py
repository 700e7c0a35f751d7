"""Right fix: `set.copy()` of the tracker's set under `connection_lock`.

Correct: `rooms.copy()` is a new set object: the live one stays with whoever holds a reference
to it (mori's cleanup), and the loop iterates the copy, which only this thread can
reach. The copy is taken inside the lock, before the pop, as upstream's `list(...)`.
An address with no set gives an empty set, so nothing is re-created in the tracker
(`.get`, never `tracker[addr]` on the defaultdict).
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            live = self.addr_to_rooms_tracker.get(addr)
            affected_rooms = live.copy() if live is not None else set()
            self.addr_to_rooms_tracker.pop(addr, None)
        self._disconnect(stale_endpoints)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
