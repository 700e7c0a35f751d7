"""Wrong fix: lifecycles numbered, but a receiver writes whether or not it still owns the room.

Tempting: the manager already starts a clean lifecycle on every Bootstrapping, and
checking ownership in the receiver's `abort` and `clear` looks redundant. Wrong: a
late abort (or `clear()`) of the previous request goes through the room id alone and
lands on the new request that reuses it: the new request reads Failed ("Aborted by
AbortReq.") or is cleared under its own feet. Breaks hardened item 2 (a receiver
writes only while its lifecycle owns the room).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.hardened.KVReceiver):
    def _owns_room(self) -> bool:
        return True  # the mistake: every request owns every room it ever had
