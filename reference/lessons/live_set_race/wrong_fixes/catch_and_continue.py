"""Wrong fix: catch the `RuntimeError` around the loop so the heartbeat survives.

Tempting: the visible damage is a dead heartbeat thread, and a `try`/`except` makes the
traceback and the death go away in one line; the heartbeat keeps probing. Wrong: the
iteration still stops where the set changed size, so every room after that point is
never failed and its request waits for a transfer from a prefill that is gone.
Caught by the story and `every-affected-room-failed` (the heartbeat checks pass).
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed


class KVManager(_Fixed):
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            stale_endpoints = self._forget_prefill_locked(addr)
            affected_rooms = self.addr_to_rooms_tracker.get(addr, set())
            self.addr_to_rooms_tracker.pop(addr, None)
        self._disconnect(stale_endpoints)
        try:
            for room in affected_rooms:
                self._fail_lost_room(room, addr)
                self.hooks.fire("node_failure.after_room", addr, room)
        except RuntimeError:
            pass  # "Set changed size during iteration": a concurrent cleanup, harmless?


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
