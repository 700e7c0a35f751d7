"""Status-manager methods with two bugs to fix (a copy of reference/buggy/manager.py).

- `update_status`: lesson `failed-resurrect` (upstream PR #24539)
- `_handle_node_failure`: lesson `live-set-race` (upstream PR #36351)

Everything else the manager does is inherited from `reference.common.manager.ManagerBase`:
the status table, the tracker, the heartbeat, `_fail_lost_room`, the hooks.
"""

from reference.common.manager import ManagerBase
from reference.status import KVPoll


class KVManager(ManagerBase):
    def update_status(self, bootstrap_room: int, status: KVPoll) -> None:
        if bootstrap_room not in self.request_status:
            # EXERCISE(failed-resurrect): an absent room was cleared (or never opened).
            # Which statuses may create an entry here? A late abort() writes Failed
            # after clear(); run `--lesson failed-resurrect` to see what that does.
            self.request_status[bootstrap_room] = status
        elif status == KVPoll.Failed:
            self.request_status[bootstrap_room] = KVPoll.Failed
        else:
            self.request_status[bootstrap_room] = max(self.request_status[bootstrap_room], status)

    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            # EXERCISE(live-set-race): the loop below runs after the lock is released.
            # What else can still reach the object taken here, and change it meanwhile?
            affected_rooms = self.addr_to_rooms_tracker.get(addr, set())
            self.addr_to_rooms_tracker.pop(addr, None)
        self._disconnect(stale_endpoints)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)
