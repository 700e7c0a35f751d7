"""Right fix: a receiver owns its room while the manager's open receiver for the id is itself.

Instead of numbering lifecycles and comparing numbers, ownership is the identity of the
receiver object: the hardened manager already keeps `receivers[room]`, set when a
request opens the room and popped by `clear()`. A new request on the same id puts its
own receiver there, so the previous request's late `abort()` or `clear()` sees
`receivers.get(room) is not self` and writes nothing. Correct: a receiver object is one
request's, it is alive while it can still write (the caller holds it), so identity
cannot be confused by reuse; the lifecycle numbers remain for the manager's own use.
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.hardened.KVReceiver):
    def _owns_room(self) -> bool:
        return self.kv_mgr.receivers.get(self.bootstrap_room) is self
