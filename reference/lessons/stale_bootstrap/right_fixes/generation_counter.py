"""Right fix: a per-key generation number, compared under `connection_lock`.

Instead of remembering the cached list object, the manager numbers every entry it
installs (`pool_generations[key]`, from one counter, under the lock) and a receiver
remembers the number of the entry it used. Invalidation deletes `pool[key]` only if the
key's current number is still the one recorded, in the same locked section. Correct:
numbers are never reused, and only a receiver's fill installs an entry (each install
takes a new number under the lock), so "same number" means "same generation" exactly
as `is` does in upstream's fix; an entry the heartbeat evicted and another receiver
re-installed has a new number and survives a late failure. A fill adopts a concurrent
winner (`setdefault`) and records the winner's number; the lookup and the number are
read in one section, so they belong together.
"""

from __future__ import annotations

import itertools
from typing import Any

from reference.fixed import BootstrapServer, DPDispatcher
from reference.fixed import KVManager as _FixedManager
from reference.fixed import KVReceiver as _FixedReceiver


class KVManager(_FixedManager):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pool_generations: dict[str, int] = {}  # key -> number of the entry installed last
        self._generation_numbers = itertools.count(1)


class KVReceiver(_FixedReceiver):
    def __init__(self, mgr: Any, bootstrap_addr: str, bootstrap_room: int) -> None:
        self._generations_used: dict[str, int] = {}
        super().__init__(mgr, bootstrap_addr, bootstrap_room)

    def invalidate_cached_bootstrap_infos(self) -> None:
        mgr = self.kv_mgr
        with mgr.connection_lock:
            for key, number in self._generations_used.items():
                if key in mgr.connection_pool and mgr.pool_generations.get(key) == number:
                    del mgr.connection_pool[key]
        self._generations_used.clear()

    def _setup_bootstrap_infos(self) -> None:
        mgr = self.kv_mgr
        all_infos: list[dict] = []
        for cp_rank in self.target_cp_ranks:
            key = self._bootstrap_key(cp_rank)
            with mgr.connection_lock:
                cached = mgr.connection_pool.get(key)
                number = mgr.pool_generations.get(key)
            if cached is not None and number is not None:
                self.bootstrap_infos = cached
                self._generations_used[key] = number
                all_infos.extend(cached)
                continue
            infos = self._fetch_bootstrap_infos(cp_rank)
            if infos is None:
                self._fail_fetch()
                self.invalidate_cached_bootstrap_infos()
                return
            self.bootstrap_infos = infos
            if not self._register_kv_args():
                self.invalidate_cached_bootstrap_infos()
                return
            with mgr.connection_lock:
                winner = mgr.connection_pool.get(key)
                if winner is None:  # ours is the first: install it under a new number
                    mgr.connection_pool[key] = winner = infos
                    mgr.pool_generations[key] = next(mgr._generation_numbers)
                self._generations_used[key] = mgr.pool_generations[key]
            self.bootstrap_infos = winner
            all_infos.extend(winner)
        self.bootstrap_infos = all_infos


__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
