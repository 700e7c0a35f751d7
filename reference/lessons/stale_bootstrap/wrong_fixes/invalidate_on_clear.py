"""Invalidate whenever a request ends, in `clear()`, success or not.

Tempting: one call site instead of four, and no entry can ever be stale for more than
one request: the next request always asks `/route`.
Wrong: the cache no longer caches. Every request pays one `GET /route` per prefill rank
and a re-registration, and a late `clear()` of an old request drops the fresh
generation another receiver just installed.
"""

import reference.fixed
from reference.fixed import BootstrapServer, DPDispatcher, KVManager

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]


class KVReceiver(reference.fixed.KVReceiver):
    def clear(self) -> None:
        self.invalidate_cached_bootstrap_infos()
        super().clear()
