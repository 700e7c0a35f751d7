"""Wrong fix: the cleanup takes `connection_lock`, but pops the address whatever set is there.

Tempting: "mori's cleanup takes no lock" is the diagnosis of the live-set race, so
taking the lock for the discard and the pop looks like the whole repair. Wrong: the
lock orders the steps, it does not say which set the cleanup holds. After the prefill
failed (the handler popped the old set) and registered again (a new receiver made a
new set under the same address), the cleanup empties its old set and, under the lock,
pops the *new* one: the new prefill's rooms are tracked nowhere and its next failure
fails none of them. Breaks hardened item 2 (pop only the set it holds).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVManager(reference.hardened.KVManager):
    def _cleanup_room_tracking(self, bootstrap_room: int) -> None:
        with self.connection_lock:
            addr = self.room_to_bootstrap_addr.pop(bootstrap_room, None)
            if addr is None:
                return
            rooms = self.addr_to_rooms_tracker.get(addr)
        self.hooks.fire("cleanup_room_tracking.after_get", bootstrap_room)
        with self.connection_lock:
            if rooms is None:
                return
            rooms.discard(bootstrap_room)
            if not rooms:
                self.addr_to_rooms_tracker.pop(addr, None)  # the mistake: maybe not the set we hold
