"""Wrong fix: lifecycles as hardened, but any status but Failed still creates an absent room.

Tempting: PR #24539 only said "a cleared room stays cleared" of Failed; a late Success
or Transferring "cannot hurt" because nobody polls a cleared room. Wrong: the late
write re-creates the room just as a late Failed did, with no lifecycle and no
receiver to clear it again: `request_status` grows with every late status (the leak
moved to another status), and a request that later reuses the id opens over a room
that was never closed. Breaks hardened item 1 (only an opening status, Bootstrapping,
creates a room).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVReceiver
from reference.status import KVPoll

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVManager(reference.hardened.KVManager):
    def update_status(self, bootstrap_room: int, status: KVPoll) -> None:
        opening_or_failed = status in (KVPoll.Bootstrapping, KVPoll.Failed)
        if bootstrap_room not in self.request_status and not opening_or_failed:
            self.request_status[bootstrap_room] = status  # the mistake: a late status re-creates the room
            return
        super().update_status(bootstrap_room, status)
