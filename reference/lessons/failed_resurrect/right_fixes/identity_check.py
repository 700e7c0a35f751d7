"""Right fix: the absent-room guard written with identity checks (`status is KVPoll.Failed`).

`KVPoll` is an `IntEnum` and its members are singletons, so `status is KVPoll.Failed`
holds exactly when `status == KVPoll.Failed` does for every value the components pass
(they pass members, never bare ints). The table is read once with `dict.get`, and
`None` (absent) is told apart by identity as well. Correct: an absent room plus Failed
stores nothing; an absent room plus any other status is stored (a room's first write
opens it); a present room keeps upstream's Failed-overwrites and `max()` branches.
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed
from reference.status import KVPoll


class KVManager(_Fixed):
    def update_status(self, bootstrap_room: int, status: KVPoll) -> None:
        current = self.request_status.get(bootstrap_room)
        if current is None and status is KVPoll.Failed:
            return  # a cleared (or never opened) room is not re-created by a late Failed
        if current is None or status is KVPoll.Failed:
            self.request_status[bootstrap_room] = status
        else:
            self.request_status[bootstrap_room] = max(current, status)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
