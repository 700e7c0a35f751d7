"""Wrong fix: the manager remembers every cleared room in a set; Failed is dropped for them.

Tempting: it is `tombstone_in_clear` with its flaw repaired, in place of upstream's
guard (the rest of `update_status` is the pre-fix body). A room's first write
(Bootstrapping) takes the id out of the set again, so a request that reuses an id can
be failed as usual, and a late Failed for a cleared room is dropped, so the room is
never re-created and `request_status` stays bounded: every check of the lesson passes.
Wrong: the set itself is the leak PR #24539 closed, moved. Every request adds its room
id when it is cleared, and ids are rarely reused (the scheduler draws them at random
from 2**63), so the set grows by one entry per request for as long as the decode runs.
The property it breaks: the decode's whole per-room state, not only `request_status`,
is bounded by the requests in flight (the simulation's whole-state bound).
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
        if status == KVPoll.Bootstrapping:
            self.cleared_rooms.discard(bootstrap_room)  # a reused id may fail again
        elif status == KVPoll.Failed and bootstrap_room in self.cleared_rooms:
            return
        # the pre-fix body: the set, not upstream's guard, does the work
        if bootstrap_room not in self.request_status:
            self.request_status[bootstrap_room] = status
        elif status == KVPoll.Failed:
            self.request_status[bootstrap_room] = KVPoll.Failed
        else:
            self.request_status[bootstrap_room] = max(self.request_status[bootstrap_room], status)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
