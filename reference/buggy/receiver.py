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
        super().__init__(mgr, bootstrap_addr, bootstrap_room)

    def _setup_bootstrap_infos(self) -> None:
        all_infos: list[dict] = []
        for cp_rank in self.target_cp_ranks:
            key = self._bootstrap_key(cp_rank)
            if key not in self.kv_mgr.connection_pool:  # BUG(stale-bootstrap): unlocked check
                infos = self._fetch_bootstrap_infos(cp_rank)
                if infos is None:
                    self._fail_fetch()
                    return
                self.bootstrap_infos = infos
                if not self._register_kv_args():
                    return
                self.kv_mgr.connection_pool[key] = (
                    self.bootstrap_infos
                )  # BUG(stale-bootstrap): cached forever
            else:
                self.bootstrap_infos = self.kv_mgr.connection_pool[key]  # BUG(stale-bootstrap): may be stale
            all_infos.extend(self.bootstrap_infos)
        self.bootstrap_infos = all_infos

    def _register_kv_args(self) -> bool:
        for info in self.bootstrap_infos or []:
            sock = self._connect_to_bootstrap_server(info)  # BUG(stale-bootstrap): connect outside the try
            try:
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
            sock = self._connect_to_bootstrap_server(info)  # BUG(stale-bootstrap): connect outside the try
            try:
                with sock.lock:
                    sock.send(self._metadata_frames(kv_indices))
            except TransportError as exc:
                self._fail_send(info, exc)
                return
        self.init_time = self.kv_mgr.clock.now()

    def _check_waiting_timeout(self) -> KVPoll:
        if not self._waiting_timed_out():
            return KVPoll.WaitingForInput
        self._record_timeout()
        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
        self._send_abort_once()
        self.conclude_state = KVPoll.Failed
        return KVPoll.Failed
