"""Wrong fix: pop the tracker's set under the lock, then iterate what `pop` returned.

Tempting: the bug reads as "the set is taken out of the table outside the lock", and
`pop` under the lock removes it from the table atomically, so nobody else can find it.
Wrong: mori's cleanup fetched its reference before the pop; taking the set out of the
table does not take it out of a thread that already holds it. The handler still
iterates the live object and dies of `Set changed size during iteration`. Caught by
the story and `every-affected-room-failed` (and by the exploration
`every-affected-room-failed`).
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            affected_rooms = self.addr_to_rooms_tracker.pop(addr, set())  # still the live set
        self._disconnect(stale_endpoints)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
