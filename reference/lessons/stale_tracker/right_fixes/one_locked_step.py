"""Right fix: mori's cleanup is one step under `connection_lock`; nothing is read before it.

The residual is a failure coming between the cleanup's read of the tracker set and its
discard and pop. Here the hook point comes first (the protocol fires hooks with no lock
held), then the address lookup, the discard and the pop of an emptied set happen in one
step while `connection_lock` is held, as the failure handler's own pop does. Correct: no
failure can come between the read and the pop, so the set the cleanup empties and pops is
always the one the address holds at that moment; a failure before the step has already
popped the room's address, and the cleanup finds nothing to do.
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVManager(reference.hardened.KVManager):
    def _cleanup_room_tracking(self, bootstrap_room: int) -> None:
        self.hooks.fire("cleanup_room_tracking.after_get", bootstrap_room)
        with self.connection_lock:
            addr = self.room_to_bootstrap_addr.pop(bootstrap_room, None)
            rooms = self.addr_to_rooms_tracker.get(addr) if addr is not None else None
            if addr is None or rooms is None:
                return
            rooms.discard(bootstrap_room)
            if not rooms:
                del self.addr_to_rooms_tracker[addr]
