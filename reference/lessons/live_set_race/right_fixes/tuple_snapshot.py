"""Right fix: snapshot the room set with `tuple(...)` under `connection_lock`.

Correct: `tuple(s)` copies a set in one C call, like `list(s)`, and it is taken while
the lock is held, before the set leaves the tracker: the loop then walks a private, immutable
object that no concurrent `discard` can change. A room a concurrent cleanup finished
after the snapshot is still in the tuple; `_fail_lost_room` skips it (absent or
Success), as it does on the fixed form.
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            affected_rooms = tuple(self.addr_to_rooms_tracker.get(addr, ()))
            self.addr_to_rooms_tracker.pop(addr, None)
        self._disconnect(stale_endpoints)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
