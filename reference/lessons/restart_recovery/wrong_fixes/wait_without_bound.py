"""Wrong fix: wait for the prefill to come back for as long as it takes.

Tempting: a prefill behind a Service always comes back, and a request that waits
succeeds instead of failing, so the waiting timeout looks like a needless give-up.
Wrong: a prefill that never comes back (scaled down, a bad config, a crash loop)
leaves every request that lost it waiting for ever: no Failed, no abort to the
prefill, the scheduler's slot never freed. Breaks hardened item 2's bound (the wait
ends, Failed, at the waiting timeout).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.hardened.KVReceiver):
    def _wait_for_prefill(self) -> bool:
        super()._wait_for_prefill()  # keeps the back-off schedule ...
        return True  # ... but never gives up

    def _retry_due(self) -> bool:
        return self.kv_mgr.clock.now() >= self._next_fetch
