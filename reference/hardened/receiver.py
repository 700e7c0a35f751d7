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

import random  # HARDEN(restart-recovery): retry jitter
from typing import Any

from reference.common.receiver import (
    KVTransferError,
    ReceiverBase,
)  # HARDEN(failure-records): raised here too
from reference.status import KVPoll
from reference.transport.base import TransportError


class KVReceiver(ReceiverBase):
    def __init__(self, mgr: Any, bootstrap_addr: str, bootstrap_room: int) -> None:
        self._connection_pool_entries: dict[str, list[dict]] = {}  # FIX(stale-bootstrap): generations used
        super().__init__(mgr, bootstrap_addr, bootstrap_room)
        self.lifecycle = mgr.room_lifecycle.get(bootstrap_room)  # HARDEN(room-reuse): which request we are
        self._prefill_missing_since: float | None = None  # HARDEN(restart-recovery): wait for a prefill
        self._retry_ceiling, self._next_fetch = self.RETRY_S, 0.0  # HARDEN(restart-recovery): back-off
        self._jitter: random.Random | None = None  # HARDEN(restart-recovery): seeded when first needed
        self._deferred_indices: list[int] | None = None  # that is restarting, metadata held until it is up
        self._sent_indices: list[int] | None = None  # HARDEN(restart-recovery): resent if the peer died
        self.lost_peer = False  # set by the manager when a prefill rank we sent to went away
        mgr.receivers[bootstrap_room] = self

    def _owns_room(self) -> bool:  # HARDEN(room-reuse): a request whose room id was reused writes nothing
        return self.kv_mgr.owns(self.bootstrap_room, self.lifecycle)

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
            cached = self.kv_mgr.connection_pool.get(key)  # HARDEN(stale-bootstrap): one atomic get, no lock
            if cached is None:
                infos = self._fetch_bootstrap_infos(cp_rank)
                if infos is None and self._wait_for_prefill():  # HARDEN(restart-recovery): retried on poll
                    self.invalidate_cached_bootstrap_infos()
                    self.bootstrap_infos = None
                    return
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
        if self._prefill_missing_since is not None:  # HARDEN(restart-recovery): sent once the prefill is up
            self._deferred_indices = list(kv_indices)
            return
        if self.bootstrap_infos is None:
            self._fail("send_metadata without bootstrap info (init failed)")
            return
        self.kv_mgr.expect_transfer(self.bootstrap_room)  # HARDEN(room-reuse): answers count from now on
        for info in self.bootstrap_infos:
            try:
                sock = self._connect_to_bootstrap_server(info)  # FIX(stale-bootstrap): connect inside the try
                with sock.lock:
                    sock.send(self._metadata_frames(kv_indices))
            except TransportError as exc:
                self.invalidate_cached_bootstrap_infos()  # FIX(stale-bootstrap): on send failure
                if self._wait_for_prefill():  # HARDEN(restart-recovery): the rank is gone; ask its
                    self.bootstrap_infos, self._deferred_indices = None, list(kv_indices)  # successor
                    return
                self._fail_send(info, exc)
                return
        self.init_time = self.kv_mgr.clock.now()
        self._sent_indices = list(kv_indices)  # HARDEN(restart-recovery)

    def _check_waiting_timeout(self) -> KVPoll:
        if not self._waiting_timed_out():
            return KVPoll.WaitingForInput
        self._record_timeout()
        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
        self.invalidate_cached_bootstrap_infos()  # FIX(stale-bootstrap): on waiting timeout
        self._send_abort_once()
        self.conclude_state = KVPoll.Failed
        return KVPoll.Failed

    def abort(self) -> None:  # HARDEN(room-reuse): a late abort of an earlier request is not ours
        if self._owns_room():
            super().abort()
        self.conclude_state = KVPoll.Failed

    def clear(self) -> None:  # HARDEN(room-reuse): a late clear must not clear the room's next request
        if self._owns_room():
            self._hold_pages_in_doubt()  # HARDEN(late-kv-write)
            super().clear()

    def _hold_pages_in_doubt(self) -> None:  # HARDEN(late-kv-write): a request that ends without every
        room = self.bootstrap_room  # rank's answer after its metadata went out may still be written by
        if self._sent_indices is None or self.kv_mgr.request_status.get(room) == KVPoll.Success:
            return  # its prefill (paused, cut off): its pages stay out of use until those ranks answer
        due = self.kv_mgr.required_prefill_response_num_table.get(room, 1) - self.kv_mgr.answers.get(room, 0)
        if due > 0:
            self.kv_mgr.hold_pages(room, self._sent_indices, due)

    def failure_exception(self) -> KVTransferError:  # HARDEN(failure-records): take the reason, then clear
        with self.kv_mgr.failure_lock:
            reason = self.kv_mgr.failure_records.pop(self.bootstrap_room, "Failed due to an unknown reason")
        self.conclude_state = KVPoll.Failed
        self.clear()
        return KVTransferError(self.bootstrap_room, reason)

    def sent_to(self, endpoint: str) -> bool:  # HARDEN(restart-recovery): waiting on that prefill rank?
        infos = (self.bootstrap_infos or []) if self.init_time is not None else []
        return any(f"tcp://{i.get('rank_ip')}:{i.get('rank_port')}" == endpoint for i in infos)

    def _resend_after_peer_loss(self) -> None:  # HARDEN(restart-recovery): the prefill died before it
        self.lost_peer = False  # answered, so no KV of ours moved: ask its successor, same pages
        if self.kv_mgr.request_status.get(self.bootstrap_room) != KVPoll.WaitingForInput:
            return
        self.invalidate_cached_bootstrap_infos()
        self.kv_mgr.prefill_response_tracker.pop(self.bootstrap_room, None)
        self.bootstrap_infos, self.init_time = None, None
        self._deferred_indices = self._sent_indices
        now = self.kv_mgr.clock.now()
        self._prefill_missing_since, self._retry_ceiling, self._next_fetch = now, self.RETRY_S, now  # ask now

    # HARDEN(restart-recovery): a route fetch that fails (the prefill is down or not yet
    # registered) is retried on a later poll, until the waiting timeout: first after RETRY_S,
    # then backing off, the ceiling doubling up to RETRY_MAX_S, so waiting requests do not
    # crowd the restarting prefill (retries every millisecond slowed its registration,
    # benchmarks/README.md). Each wait is jittered (half to all of the ceiling, seeded by the
    # room) so requests that lost the prefill together do not retry together. Metadata sent
    # meanwhile is held and sent once the new prefill answered.
    RETRY_S = 0.001
    RETRY_MAX_S = 0.05

    def _wait_for_prefill(self) -> bool:  # HARDEN(restart-recovery)
        now = self.kv_mgr.clock.now()
        if self._prefill_missing_since is None:
            self._prefill_missing_since, self._retry_ceiling = now, self.RETRY_S
        if self._jitter is None:  # a few microseconds, so only for requests that wait
            self._jitter = random.Random(self.bootstrap_room)
        self._next_fetch = now + self._retry_ceiling * self._jitter.uniform(0.5, 1.0)
        self._retry_ceiling = min(2 * self._retry_ceiling, self.RETRY_MAX_S)
        return now - self._prefill_missing_since < self.kv_mgr.config.waiting_timeout

    def poll(self) -> KVPoll:  # HARDEN(restart-recovery): retry the route fetch while waiting for the prefill
        if self.lost_peer and self.conclude_state is None:
            self._resend_after_peer_loss()
        if self._prefill_missing_since is not None and self.conclude_state is None and self._retry_due():
            self._setup_bootstrap_infos()
            if self.bootstrap_infos is not None and self.conclude_state is None:
                self._prefill_missing_since = None
                if self._deferred_indices is not None:
                    self.send_metadata(self._deferred_indices)
        return super().poll()

    def _retry_due(self) -> bool:  # HARDEN(restart-recovery)
        now, since = self.kv_mgr.clock.now(), self._prefill_missing_since or 0.0
        return now >= self._next_fetch or now - since >= self.kv_mgr.config.waiting_timeout
