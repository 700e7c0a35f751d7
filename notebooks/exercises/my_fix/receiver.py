"""Receiver methods with a bug to fix (a copy of reference/buggy/receiver.py).

- lesson `stale-bootstrap` (upstream PR #36029): the `connection_pool` cache of each
  prefill rank's address. A prefill that restarts behind the same bootstrap address
  binds new ports, keeps answering `/health`, and so is never evicted by the heartbeat.
  The fix touches `__init__`, `_setup_bootstrap_infos`, `_register_kv_args`,
  `send_metadata`, `_check_waiting_timeout`, and adds one method.

Everything else is inherited from `reference.common.receiver.ReceiverBase`.
"""

from __future__ import annotations

from typing import Any

from reference.common.receiver import ReceiverBase
from reference.status import KVPoll
from reference.transport.base import TransportError


class KVReceiver(ReceiverBase):
    def __init__(self, mgr: Any, bootstrap_addr: str, bootstrap_room: int) -> None:
        super().__init__(mgr, bootstrap_addr, bootstrap_room)
        # EXERCISE(stale-bootstrap): when a request fails, how would this receiver know
        # which cached entries it used, and drop only those (not a newer one that another
        # receiver installed meanwhile)?

    def _setup_bootstrap_infos(self) -> None:
        all_infos: list[dict] = []
        for cp_rank in self.target_cp_ranks:
            key = self._bootstrap_key(cp_rank)
            # EXERCISE(stale-bootstrap): this check and the read below are two unlocked steps.
            if key not in self.kv_mgr.connection_pool:
                infos = self._fetch_bootstrap_infos(cp_rank)
                if infos is None:
                    self._fail_fetch()
                    return
                self.bootstrap_infos = infos
                if not self._register_kv_args():
                    return
                # EXERCISE(stale-bootstrap): once cached, who ever removes this entry?
                self.kv_mgr.connection_pool[key] = self.bootstrap_infos
            else:
                self.bootstrap_infos = self.kv_mgr.connection_pool[key]
            all_infos.extend(self.bootstrap_infos)
        self.bootstrap_infos = all_infos

    def _register_kv_args(self) -> bool:
        for info in self.bootstrap_infos or []:
            # EXERCISE(stale-bootstrap): can connecting fail too? What happens then?
            sock = self._connect_to_bootstrap_server(info)
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
            sock = self._connect_to_bootstrap_server(info)
            try:
                with sock.lock:
                    sock.send(self._metadata_frames(kv_indices))
            except TransportError as exc:
                # EXERCISE(stale-bootstrap): the send failed: are the cached ports still good?
                self._fail_send(info, exc)
                return
        self.init_time = self.kv_mgr.clock.now()

    def _check_waiting_timeout(self) -> KVPoll:
        if not self._waiting_timed_out():
            return KVPoll.WaitingForInput
        self._record_timeout()
        # EXERCISE(stale-bootstrap): nobody answered in time; the next request will reuse the cache.
        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
        self._send_abort_once()
        self.conclude_state = KVPoll.Failed
        return KVPoll.Failed
