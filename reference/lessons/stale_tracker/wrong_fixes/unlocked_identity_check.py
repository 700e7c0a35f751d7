"""Wrong fix: the cleanup checks that its set is still the tracker's, without the lock.

Tempting: the identity check is the subtle part and it is kept (`tracker.get(addr) is
rooms`), and each step is one dict or set operation, atomic under the GIL. Wrong: the
check and the pop are two steps with nothing held between them. A failure handler can
pop the set and a new receiver install a fresh one for the same address right after
the check passed, and the cleanup pops the fresh set anyway; the discard also races
the handler's snapshot, as in lesson `live-set-race`. Breaks hardened item 1 (look up
and discard under `connection_lock`, in one locked step with the identity check).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVManager(reference.hardened.KVManager):
    def _cleanup_room_tracking(self, bootstrap_room: int) -> None:
        addr = self.room_to_bootstrap_addr.pop(bootstrap_room, None)
        if addr is None:
            return
        rooms = self.addr_to_rooms_tracker.get(addr)
        self.hooks.fire("cleanup_room_tracking.after_get", bootstrap_room)
        if rooms is None or self.addr_to_rooms_tracker.get(addr) is not rooms:  # checked ...
            return
        rooms.discard(bootstrap_room)
        if not rooms:
            self.addr_to_rooms_tracker.pop(addr, None)  # ... and popped later, nothing held between
