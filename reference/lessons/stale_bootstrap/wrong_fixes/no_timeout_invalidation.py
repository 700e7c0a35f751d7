"""Invalidate on a failed send, not on the waiting timeout.

Tempting: a timeout looks like "the prefill is slow", not "the ports are wrong", and the
reviewers' "slow, not dead" worry goes away; a dead port makes the send fail anyway.
Wrong: with upstream's socket options (ZMQ_IMMEDIATE=0) a send to a dead port does not
fail: it queues silently. The waiting timeout is the only failure upstream sees, so the
stale entry stays and every request after the restart fails.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager
from reference.status import KVPoll

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def _check_waiting_timeout(self) -> KVPoll:
        if not self._waiting_timed_out():
            return KVPoll.WaitingForInput
        self._record_timeout()
        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
        self._send_abort_once()
        self.conclude_state = KVPoll.Failed
        return KVPoll.Failed
