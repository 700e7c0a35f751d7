"""Wrong fix: a prefill's transfer status counts for any open room, metadata sent or not.

Tempting: the status table is open for the room and the answer names it, so taking it
is what upstream does, and tagging "metadata sent" looks like bookkeeping for a race
that needs a reused id. Wrong: the previous request's transfer statuses, held up in
the network, arrive after the new request opened the same id and before it sent its
metadata; they count, and `max()` lifts the new request to Success with none of its
KV pages written. Breaks hardened item 3 (transfer statuses count only once the
current request sent its metadata).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVManager(reference.hardened.KVManager):
    def _open_lifecycle(self, room: int) -> None:
        super()._open_lifecycle(room)
        self.awaiting_transfer.add(room)  # the mistake: answers count from the open, metadata or not
