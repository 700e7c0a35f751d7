"""Abort by recording the failure and writing Failed, without latching the receiver.

Tempting: the manager's table says Failed and a failure is recorded, so every poll
reads Failed anyway; the latch (`conclude_state`) looks redundant.
Wrong: a prefill rank that finished before it heard of the abort delivers its Success,
and the table takes the larger status: the aborted request polls Success and the
scheduler uses pages it already gave up. PR #24522's abort latches Failed.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager
from reference.status import KVPoll

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def abort(self) -> None:
        self.kv_mgr.record_failure(self.bootstrap_room, "Aborted by AbortReq.")
        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
