"""Status-manager methods touched by two upstream fixes.

- `update_status`: lesson `failed-resurrect`, PR #24539 (first in sglang 0.5.12)
- `_handle_node_failure`: lesson `live-set-race`, PR #36351 (first in sglang 0.5.19)

`reference/buggy/manager.py` is the code before both fixes, `reference/fixed/manager.py`
after; their diff is exactly the two fixes. Everything else is in `common/manager.py`.
"""

from reference.common.manager import ManagerBase
from reference.status import KVPoll


class KVManager(ManagerBase):
    def update_status(self, bootstrap_room: int, status: KVPoll) -> None:
        if bootstrap_room not in self.request_status:
            self.request_status[bootstrap_room] = status  # BUG(failed-resurrect): even Failed
        elif status == KVPoll.Failed:
            self.request_status[bootstrap_room] = KVPoll.Failed
        else:
            self.request_status[bootstrap_room] = max(self.request_status[bootstrap_room], status)

    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            affected_rooms = self.addr_to_rooms_tracker.get(addr, set())  # BUG(live-set-race): live set
            self.addr_to_rooms_tracker.pop(addr, None)
        self._disconnect(stale_endpoints)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)
