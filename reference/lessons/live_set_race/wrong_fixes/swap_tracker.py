"""Wrong fix: swap in a fresh tracker under the lock and iterate a copy of the old one.

Tempting: mori's cleanup keeps a reference into the tracker, so replacing the whole
table under the lock and taking a snapshot of the failed prefill's rooms seems to cut
every racing writer off at once. The snapshot does fix the race. Wrong: the fresh
table has forgotten every *other* prefill's rooms: they are no longer tracked, and
when one of those prefills dies later its rooms are never failed. Caught by
`every-affected-room-failed` (its live third prefill) and the story's second prefill.
"""

from collections import defaultdict

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            old, self.addr_to_rooms_tracker = self.addr_to_rooms_tracker, defaultdict(set)
            affected_rooms = list(old.get(addr, ()))
        self._disconnect(stale_endpoints)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
