"""Drop a dead prefill's cache entries, and leave its sockets alone.

Tempting: PR #36029 is about the cache, and the heartbeat's failure handler already
drops every entry of the dead address; a PUSH socket reconnects by itself when the
process comes back, so closing it looks like busywork.
Wrong: a prefill that comes back does so on new ports; the sockets to the old ones stay
open (and, with upstream's options, keep queueing what is sent to them) for the life
of the decode. Upstream's handler disconnects every rank endpoint the dropped entries
named (`disconnect_endpoint`, sglang 0.5.14 on).
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVManager(reference.fixed.KVManager):
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        with self.connection_lock:
            self._forget_prefill_locked(addr)  # the endpoints it returns are never disconnected
            affected_rooms = list(self.addr_to_rooms_tracker.get(addr, ()))
            self.addr_to_rooms_tracker.pop(addr, None)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)
            self.hooks.fire("node_failure.after_room", addr, room)
