"""Right fix: pop the set out of the tracker and copy it, in one locked step.

`list(tracker.pop(addr, ()))` under `connection_lock`: the pop removes the address
(so a later `track_room` gets a fresh set), and the copy is made before the lock is
released. Correct: unlike the wrong fix `live_set_pop`, which iterates what `pop` returned (the
live object mori's cleanup still holds), the loop walks the private list, so a discard
on the popped set changes nothing it iterates.
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            affected_rooms = list(self.addr_to_rooms_tracker.pop(addr, ()))
        self._disconnect(stale_endpoints)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
