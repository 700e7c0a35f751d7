"""Wrong fix: a waiting request retries `GET /route` every millisecond, no back-off.

Tempting: the sooner a waiting request asks, the sooner it finds the new prefill, and
1 ms is what the first retry waits anyway. Wrong: every waiting request then hits the
restarting prefill's bootstrap server 1000 times a second, in step with every other
request that lost it; measured here, the fetches competing for the same cores made
the new prefill register later (1.17x to 1.49x fixed's time, benchmarks/README.md).
Breaks hardened item 2's back-off (the wait doubles up to 50 ms, jittered per room).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.hardened.KVReceiver):
    def _wait_for_prefill(self) -> bool:
        now = self.kv_mgr.clock.now()
        if self._prefill_missing_since is None:
            self._prefill_missing_since = now
        self._next_fetch = now + self.RETRY_S  # no doubling, no jitter
        return now - self._prefill_missing_since < self.kv_mgr.config.waiting_timeout
