"""Right fix: mori's cleanup only discards, under the lock; it never pops the address.

The residual is the cleanup's `pop(addr)` of a set it no longer holds. Here the cleanup
looks its set up under `connection_lock` (as hardened does), and after the hook point
discards the room under the lock only if that set is still the tracker's; it never
pops. An emptied set stays under its address until the address's failure handler pops
it, or a receiver adds to it again. Correct: nothing can remove a set another prefill
generation put under the address, so the new prefill's rooms stay tracked and its next
failure fails them; the state stays bounded, by one (possibly empty) set per prefill
address, not per request.
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVManager(reference.hardened.KVManager):
    def _cleanup_room_tracking(self, bootstrap_room: int) -> None:
        with self.connection_lock:
            addr = self.room_to_bootstrap_addr.pop(bootstrap_room, None)
            rooms = self.addr_to_rooms_tracker.get(addr) if addr is not None else None
        if addr is None:
            return
        self.hooks.fire("cleanup_room_tracking.after_get", bootstrap_room)
        with self.connection_lock:
            if rooms is not None and self.addr_to_rooms_tracker.get(addr) is rooms:
                rooms.discard(bootstrap_room)
