"""Wrong fix: `update_status` ignores Failed; failures live in `failure_records` only.

Tempting: PR #24522 added the Failed write that the late abort turns into a
resurrection, and `record_failure` already keeps the reason, so dropping the status
write looks like the smallest change that makes the leak impossible. Wrong: a request
that is still open must read Failed when it is aborted, times out or loses its
prefill, or the decode polls it for ever (upstream's poll latches Failed from the
status table). Caught by `open-room-takes-failed`; the story passes.
"""

from reference.fixed import BootstrapServer, DPDispatcher, KVReceiver
from reference.fixed import KVManager as _Fixed
from reference.status import KVPoll


class KVManager(_Fixed):
    def update_status(self, bootstrap_room: int, status: KVPoll) -> None:
        if status == KVPoll.Failed:
            return
        super().update_status(bootstrap_room, status)


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
