"""live-set-race: pop the tracker's set under the lock, but iterate that same live set."""

import reference.fixed
from reference.common.manager import ManagerBase


class KVManager(reference.fixed.KVManager):
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            affected_rooms = self.addr_to_rooms_tracker.pop(addr, set())  # still the live set
        self._disconnect(stale_endpoints)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)


__all__ = ["KVManager", "ManagerBase"]
