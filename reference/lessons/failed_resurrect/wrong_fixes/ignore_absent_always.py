"""Wrong fix: an absent room ignores every write, not only Failed.

Tempting: "a cleared room stays cleared" read literally; a late Success or
Transferring after `clear()` looks just as stale as a late Failed. Wrong: the first
write of a room's life (the receiver's Bootstrapping) is a write to an absent room.
Ignoring it means no new request ever appears in the status table and every poll
raises KeyError. Caught by the simulation (`no-raise`) and by every scenario that opens a
room (the story cannot even read its rooms back).
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed
from reference.status import KVPoll


class KVManager(_Fixed):
    def update_status(self, bootstrap_room: int, status: KVPoll) -> None:
        if bootstrap_room not in self.request_status:
            return
        super().update_status(bootstrap_room, status)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
