"""Receiver methods touched by an upstream fix.

- lesson `stale-bootstrap`, PR #36029 (first in sglang 0.5.19): `__init__`,
  `_setup_bootstrap_infos`, `invalidate_cached_bootstrap_infos`, `_register_kv_args`,
  `send_metadata`, `_check_waiting_timeout`

`reference/buggy/receiver.py` is the code before the fix, `reference/fixed/receiver.py`
after; their diff is exactly the fix. Before it, a `connection_pool` entry is cached
forever: only the heartbeat's `_handle_node_failure` removes it, and a prefill that
restarts behind the same bootstrap address with new ports never fails `/health`.
Everything else is in `common/receiver.py`.
"""

from __future__ import annotations

from typing import Any

from reference.common.receiver import ReceiverBase
from reference.status import KVPoll
from reference.transport.base import TransportError


class KVReceiver(ReceiverBase):
    def __init__(self, mgr: Any, bootstrap_addr: str, bootstrap_room: int) -> None:
        self._connection_pool_entries: dict[str, list[dict]] = {}  # FIX(stale-bootstrap): generations used
        super().__init__(mgr, bootstrap_addr, bootstrap_room)

    def invalidate_cached_bootstrap_infos(self) -> None:
        # FIX(stale-bootstrap): drop only the generation this receiver used (identity, not
        # equality), so a newer one that another receiver installed meanwhile survives.
        with self.kv_mgr.connection_lock:
            for key, infos in self._connection_pool_entries.items():
                if self.kv_mgr.connection_pool.get(key) is infos:
                    del self.kv_mgr.connection_pool[key]
        self._connection_pool_entries.clear()

    def _setup_bootstrap_infos(self) -> None:
        all_infos: list[dict] = []
        for cp_rank in self.target_cp_ranks:
            key = self._bootstrap_key(cp_rank)
            with self.kv_mgr.connection_lock:  # FIX(stale-bootstrap): one locked lookup
                cached = self.kv_mgr.connection_pool.get(key)
            if cached is None:
                infos = self._fetch_bootstrap_infos(cp_rank)
                if infos is None:
                    self._fail_fetch()
                    self.invalidate_cached_bootstrap_infos()  # FIX(stale-bootstrap): on fetch failure
                    return
                self.bootstrap_infos = infos
                self._connection_pool_entries[key] = infos  # FIX(stale-bootstrap): record the generation
                if not self._register_kv_args():
                    self.invalidate_cached_bootstrap_infos()  # FIX(stale-bootstrap): on registration failure
                    return
                with self.kv_mgr.connection_lock:  # FIX(stale-bootstrap): adopt a concurrent winner
                    self.bootstrap_infos = self.kv_mgr.connection_pool.setdefault(key, infos)
                self._connection_pool_entries[key] = self.bootstrap_infos
            else:
                self.bootstrap_infos = cached  # FIX(stale-bootstrap): the object looked up under the lock
                self._connection_pool_entries[key] = cached
            all_infos.extend(self.bootstrap_infos)
        self.bootstrap_infos = all_infos

    def _register_kv_args(self) -> bool:
        for info in self.bootstrap_infos or []:
            try:
                sock = self._connect_to_bootstrap_server(info)  # FIX(stale-bootstrap): connect inside the try
                with sock.lock:
                    sock.send(self._registration_frames(info))
            except TransportError as exc:
                self._fail_register(info, exc)
                return False
        return True

    def send_metadata(self, kv_indices: list[int]) -> None:
        if self.bootstrap_infos is None:
            self._fail("send_metadata without bootstrap info (init failed)")
            return
        for info in self.bootstrap_infos:
            try:
                sock = self._connect_to_bootstrap_server(info)  # FIX(stale-bootstrap): connect inside the try
                with sock.lock:
                    sock.send(self._metadata_frames(kv_indices))
            except TransportError as exc:
                self.invalidate_cached_bootstrap_infos()  # FIX(stale-bootstrap): on send failure
                self._fail_send(info, exc)
                return
        self.init_time = self.kv_mgr.clock.now()

    def _check_waiting_timeout(self) -> KVPoll:
        if not self._waiting_timed_out():
            return KVPoll.WaitingForInput
        self._record_timeout()
        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
        self.invalidate_cached_bootstrap_infos()  # FIX(stale-bootstrap): on waiting timeout
        self._send_abort_once()
        self.conclude_state = KVPoll.Failed
        return KVPoll.Failed
