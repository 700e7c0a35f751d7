"""Right fix: a snapshot, iterated while `connection_lock` is still held.

The snapshot (`list(...)`) is what makes it correct: a concurrent discard changes the
live set, never the list. Holding the lock across the loop as well is safe here, and
only here: nothing the loop calls takes `connection_lock` (`_fail_lost_room` reads the
status table, takes `failure_lock` in `record_failure` and writes `update_status`,
which takes no lock), and the racing writer, mori's `_cleanup_room_tracking`, takes
none either, so the lock cannot be waited on from inside the loop. (With a cleanup that
locks, as `reference.hardened`'s, this layout would make the cleanup wait out the loop;
with a non-reentrant lock taken again in `_fail_lost_room` it would deadlock.) The
disconnects still happen after the lock is released, as upstream's.
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            affected_rooms = list(self.addr_to_rooms_tracker.pop(addr, ()))
            for room in affected_rooms:
                self._fail_lost_room(room, addr)
                self.hooks.fire("node_failure.after_room", addr, room)
        self._disconnect(stale_endpoints)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
