"""Identity-checked invalidation without `connection_lock`: check, then `pop(key, None)`.

No KeyError, but the check and the pop are two steps: when another receiver drops the
stale generation and a new request installs a fresh one between them, this pop drops
the fresh one (by key, after an identity check that is no longer true).
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        pool = self.kv_mgr.connection_pool
        for key, infos in self._connection_pool_entries.items():
            if pool.get(key) is infos:
                pool.pop(key, None)
        self._connection_pool_entries.clear()
