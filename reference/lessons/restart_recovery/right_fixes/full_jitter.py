"""Right fix: "full jitter" back-off while waiting for a restarting prefill.

The hardened receiver waits between half and all of a doubling ceiling (1 ms up to
50 ms). Here each wait is drawn uniformly between 0 and the ceiling (AWS's "full
jitter"), still seeded by the room so a run is reproducible. Correct: the waits stay
bounded by the same ceiling, so a waiting request asks `/route` at least every 50 ms
and finds the new prefill within one ceiling of its registration; the mean wait is
half the ceiling, so requests that lost the prefill together spread out at least as
well; and the waiting timeout still ends the wait.
"""

import random

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.hardened.KVReceiver):
    def _wait_for_prefill(self) -> bool:
        now = self.kv_mgr.clock.now()
        if self._prefill_missing_since is None:
            self._prefill_missing_since, self._retry_ceiling = now, self.RETRY_S
        if self._jitter is None:
            self._jitter = random.Random(self.bootstrap_room)
        self._next_fetch = now + self._jitter.uniform(0.0, self._retry_ceiling)
        self._retry_ceiling = min(2 * self._retry_ceiling, self.RETRY_MAX_S)
        return now - self._prefill_missing_since < self.kv_mgr.config.waiting_timeout
