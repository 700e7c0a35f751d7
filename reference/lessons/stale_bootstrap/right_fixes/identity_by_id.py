"""Right fix: the identity check written as `id(current) == id(used)`, the objects kept alive.

`id()` equality is identity only while both objects are alive: a freed list's id can
be reused by a new one. Here the receiver keeps every list it used in
`_connection_pool_entries` until it invalidates, and the pool holds the current one,
so both are alive when their ids are compared, under `connection_lock`. Correct: the
comparison is then exactly upstream's `is`. A newer generation another receiver installed is a
different object with a different id and survives.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager


class KVReceiver(reference.fixed.KVReceiver):
    def invalidate_cached_bootstrap_infos(self) -> None:
        pool = self.kv_mgr.connection_pool
        with self.kv_mgr.connection_lock:
            ours = [key for key, used in self._connection_pool_entries.items()
                    if key in pool and id(pool[key]) == id(used)]  # fmt: skip
            for key in ours:
                del pool[key]
        self._connection_pool_entries.clear()  # only now may the used lists be freed


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
