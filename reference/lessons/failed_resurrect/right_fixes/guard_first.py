"""Right fix: one early-return guard in front of the buggy form's unchanged body.

Instead of nesting the check inside the absent-room branch, the method begins with
`if status == Failed and room not in request_status: return` and then runs the
pre-fix `update_status` as it was. Correct: the guard fires for exactly the case
upstream's fix covers (Failed for an absent room), and every other write reaches the
same three branches as before, so a new room still opens on its first write and an
open room still takes Failed.
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed
from reference.status import KVPoll


class KVManager(_Fixed):
    def update_status(self, bootstrap_room: int, status: KVPoll) -> None:
        if status == KVPoll.Failed and bootstrap_room not in self.request_status:
            return
        # the pre-fix body, unchanged
        if bootstrap_room not in self.request_status:
            self.request_status[bootstrap_room] = status
        elif status == KVPoll.Failed:
            self.request_status[bootstrap_room] = KVPoll.Failed
        else:
            self.request_status[bootstrap_room] = max(self.request_status[bootstrap_room], status)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
