"""Identity-checked invalidation without `connection_lock`: check, then `del`.

The check (`pool.get(key) is infos`) and the delete are two steps: when another receiver
drops the stale generation and a new request installs a fresh one between them, this
`del` drops the fresh one (and when nothing was installed yet, raises KeyError).
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        pool = self.kv_mgr.connection_pool
        for key, infos in self._connection_pool_entries.items():
            if pool.get(key) is infos:
                del pool[key]
        self._connection_pool_entries.clear()
