"""Wrong fix: make Failed terminal instead of ignoring it for an absent room.

Tempting: sglang 0.5.20 did make Failed terminal, and "once failed, always failed"
sounds like the safe reading of a late abort. Wrong on its own: the late Failed for a
cleared room is still stored (the room comes back, the table leaks), and now a new
request that reuses the id can never lift it: it is Failed from its first poll, the
PR's second consequence made certain. Caught by `late-failed-never-recreates` and by the
simulation (`cleared-stays-cleared`).
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed
from reference.status import KVPoll


class KVManager(_Fixed):
    def update_status(self, bootstrap_room: int, status: KVPoll) -> None:
        current = self.request_status.get(bootstrap_room)
        if current == KVPoll.Failed or status == KVPoll.Failed:
            self.request_status[bootstrap_room] = KVPoll.Failed  # terminal, present or not
        elif current is None:
            self.request_status[bootstrap_room] = status
        else:
            self.request_status[bootstrap_room] = max(current, status)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
