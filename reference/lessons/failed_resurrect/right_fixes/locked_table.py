"""Right fix: the status table behind its own lock, the check and the write in one section.

Upstream's fix checks `room in request_status` and writes without a lock, so a
`clear()` that lands between the two still lets a Failed re-create the room (the
explorations' unclaimed `atomic-against-clear`). Here `update_status` and `clear` take
one `status_lock`, which nothing else holds and which is never taken inside another
lock of the manager, so it cannot deadlock; reads (`check_status`, `request_status.get`)
stay lock-free as upstream's. Correct, and stronger than the fix: an absent room plus
Failed stores nothing, whatever `clear()` does concurrently; every other write behaves
as upstream's.
"""

import threading

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed
from reference.status import KVPoll


class KVManager(_Fixed):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.status_lock = threading.Lock()

    def update_status(self, bootstrap_room: int, status: KVPoll) -> None:
        with self.status_lock:
            super().update_status(bootstrap_room, status)

    def clear(self, bootstrap_room: int) -> None:
        with self.status_lock:
            super().clear(bootstrap_room)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
