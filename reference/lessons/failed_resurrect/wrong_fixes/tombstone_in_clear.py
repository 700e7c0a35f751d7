"""Wrong fix: remember cleared rooms in `clear()` and drop any Failed for them.

Tempting: the fix "belongs" where the room disappears, and a tombstone set makes the
late write's rejection explicit and easy to log. Wrong: a tombstone outlives the room
id. A new request that reuses the id (users may supply `bootstrap_room`) can then
never be failed: its abort, its timeout, its prefill's death are all dropped and the
decode waits for a transfer that will not come. (The tombstones also grow with every
request, the leak moved rather than closed.) Caught by `open-room-takes-failed`; the
story passes.
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed
from reference.status import KVPoll


class KVManager(_Fixed):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.cleared_rooms: set[int] = set()

    def clear(self, bootstrap_room: int) -> None:
        self.cleared_rooms.add(bootstrap_room)
        super().clear(bootstrap_room)

    def update_status(self, bootstrap_room: int, status: KVPoll) -> None:
        if status == KVPoll.Failed and bootstrap_room in self.cleared_rooms:
            return
        super().update_status(bootstrap_room, status)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
