"""Wrong fix: a route fetch that fails still fails the request at once.

Tempting: the disconnect already drops the stale cache entry, so the next request
fetches `/route` from the new prefill; waiting inside a request looks like added
complexity for a rare window. Wrong: the window is the restart itself. A request that
arrives while the prefill is down (connection refused) or still registering its ranks
(503) fails as "no prefill" although the new prefill is up a moment later, and a
request whose prefill died in flight cannot wait for its successor either. Breaks
hardened item 2 (wait, bounded, for a prefill that is coming back).
"""

import reference.hardened
from reference.hardened import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.hardened.KVReceiver):
    def _wait_for_prefill(self) -> bool:
        return False  # never wait: fail on the first refused or unready fetch
