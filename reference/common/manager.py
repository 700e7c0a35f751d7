"""The decode-side status manager (upstream `CommonKVManager` in DECODE mode).

It owns the per-request status table, the failure records, the cache of prefill
bootstrap metadata (`connection_pool`), which rooms wait on which prefill
(`addr_to_rooms_tracker`) and the heartbeat thread that fails those rooms when a
prefill stops answering `/health`. Two lessons live in the methods a variant overrides:

- `update_status` (lesson `failed-resurrect`, PR #24539)
- `_handle_node_failure` (lesson `live-set-race`, PR #36351)

Locking is as upstream: `connection_lock` guards the pool, the info table and the
tracker; `request_status` has no lock; `failure_records` has its own.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable

from reference.clock import Clock, RealClock
from reference.common.decode_inbox import DecodeInbox
from reference.config import ManagerConfig
from reference.dataplane import KVMemory
from reference.hooks import Hooks
from reference.messages import PrefillServerInfo
from reference.status import KVPoll
from reference.transport.base import Transport, TransportError

ALL_RANKS = {"prefill_dp_rank": -1, "prefill_cp_rank": -1, "target_tp_rank": -1, "target_pp_rank": -1}


class ManagerBase:
    def __init__(
        self,
        transport: Transport,
        config: ManagerConfig | None = None,
        clock: Clock | None = None,
        hooks: Hooks | None = None,
    ) -> None:
        self.transport = transport
        self.config = config or ManagerConfig()
        self.clock = clock or RealClock()
        self.hooks = hooks or Hooks()
        self.request_status: dict[int, KVPoll] = {}
        self.failure_records: dict[int, str] = {}
        self.failure_lock = threading.Lock()
        self.connection_pool: dict[str, list[dict]] = {}
        self.connection_lock = threading.Lock()
        self.prefill_info_table: dict[str, PrefillServerInfo] = {}
        self.addr_to_rooms_tracker: defaultdict[str, set[int]] = defaultdict(set)
        self.room_to_bootstrap_addr: dict[int, str] = {}
        self.heartbeat_failures: dict[str, int] = {}
        self.heartbeat_rounds = 0
        # Receiver side: how many prefill ranks must answer per room, which did, and
        # where they answer (the decode's PULL socket and registered KV memory).
        self.required_prefill_response_num_table: dict[int, int] = {}
        self.prefill_response_tracker: defaultdict[int, set[int]] = defaultdict(set)
        self.inbox: DecodeInbox | None = None
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    # -- status table ----------------------------------------------------------
    def update_status(self, bootstrap_room: int, status: KVPoll) -> None:
        raise NotImplementedError("a variant provides update_status")

    def check_status(self, bootstrap_room: int) -> KVPoll:
        """Raises KeyError for a cleared room, as upstream."""
        return self.request_status[bootstrap_room]

    def clear(self, bootstrap_room: int) -> None:
        """What a receiver's `clear()` does to the manager: forget the room."""
        self.request_status.pop(bootstrap_room, None)

    def accepts_transfer_status(self, bootstrap_room: int) -> bool:
        """Whether a prefill's transfer status for this room is taken (the decode inbox asks):
        as upstream, for any room still in the status table."""
        return bootstrap_room in self.request_status

    def record_failure(self, bootstrap_room: int, reason: str) -> None:
        with self.failure_lock:
            self.failure_records[bootstrap_room] = reason

    def abort(self, bootstrap_room: int) -> None:
        """A late `abort()` as #24522 wrote it: record, then write Failed."""
        self.record_failure(bootstrap_room, "Aborted by AbortReq.")
        self.update_status(bootstrap_room, KVPoll.Failed)

    # -- prefill bookkeeping -----------------------------------------------------
    def add_prefill(self, bootstrap_addr: str, info: PrefillServerInfo | None = None) -> None:
        """What a successful `try_ensure_parallel_info(addr)` leaves behind."""
        with self.connection_lock:
            self.prefill_info_table[bootstrap_addr] = info or PrefillServerInfo()

    def try_ensure_parallel_info(self, bootstrap_addr: str) -> bool:
        """Fetch and cache the prefill's layout with one `GET /route` (every rank -1).

        False when the server cannot answer yet (upstream: the decode queue retries, then
        aborts the request); RuntimeError when the layouts cannot work together.
        """
        with self.connection_lock:
            if bootstrap_addr in self.prefill_info_table:
                return True
        try:
            reply = self.transport.get_route(bootstrap_addr, ALL_RANKS)
        except TransportError:
            return False
        if reply.status != 200 or not isinstance(reply.body, dict):
            return False
        try:
            info = PrefillServerInfo(**{k: reply.body[k] for k in PrefillServerInfo.__dataclass_fields__})
        except KeyError:
            return False
        if (info.page_size, info.kv_cache_dtype) != (self.config.page_size, self.config.kv_cache_dtype):
            raise RuntimeError(
                f"prefill {bootstrap_addr} has page_size={info.page_size}, "
                f"kv_cache_dtype={info.kv_cache_dtype}; decode has {self.config.page_size}, "
                f"{self.config.kv_cache_dtype}"
            )
        self.add_prefill(bootstrap_addr, info)
        return True

    def listen(self, memory: KVMemory) -> DecodeInbox:
        """Bind this rank's PULL socket and register its KV memory (upstream: in __init__)."""
        inbox = DecodeInbox(self, memory)
        inbox.endpoint = self.transport.bind_inbox(inbox.handle)
        self.transport.register_memory(inbox.session, memory)
        self.inbox = inbox
        return inbox

    def track_room(self, bootstrap_addr: str, bootstrap_room: int) -> None:
        """What a receiver's constructor does: track the room, mark it Bootstrapping."""
        self.addr_to_rooms_tracker[bootstrap_addr].add(bootstrap_room)
        self.room_to_bootstrap_addr[bootstrap_room] = bootstrap_addr
        self.update_status(bootstrap_room, KVPoll.Bootstrapping)

    def _cleanup_room_tracking(self, bootstrap_room: int) -> None:
        """Backend-style cleanup as upstream mori does it on Success/Failed.

        It keeps a reference to the live tracker set and discards from it without
        `connection_lock`: the concurrent mutator that breaks `_handle_node_failure`.
        """
        addr = self.room_to_bootstrap_addr.pop(bootstrap_room, None)
        if addr is None:
            return
        rooms = self.addr_to_rooms_tracker.get(addr)
        self.hooks.fire("cleanup_room_tracking.after_get", bootstrap_room)
        if rooms is None:
            return
        rooms.discard(bootstrap_room)
        if not rooms:
            self.addr_to_rooms_tracker.pop(addr, None)

    # -- node failure --------------------------------------------------------------
    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        raise NotImplementedError("a variant provides _handle_node_failure")

    def _forget_prefill_locked(self, addr: str) -> set[str]:
        """Drop the pool entries and info of `addr`; return their endpoints.

        Called with `connection_lock` held. Pool keys start with the address.
        """
        keys = [key for key in self.connection_pool if key.startswith(addr)]
        endpoints = {
            f"tcp://{info['rank_ip']}:{info['rank_port']}"
            for key in keys
            for info in self.connection_pool[key]
            if info.get("rank_ip") and info.get("rank_port")
        }
        for key in keys:
            del self.connection_pool[key]
        self.prefill_info_table.pop(addr, None)
        return endpoints

    def _disconnect(self, endpoints: Iterable[str]) -> None:
        for endpoint in endpoints:
            self.transport.disconnect(endpoint)

    def _fail_lost_room(self, bootstrap_room: int, addr: str) -> None:
        if bootstrap_room not in self.request_status:
            return
        if self.check_status(bootstrap_room) == KVPoll.Success:
            return
        self.record_failure(bootstrap_room, f"Lost connection with prefill instance (bootstrap_addr: {addr})")
        self.update_status(bootstrap_room, KVPoll.Failed)

    # -- heartbeat -----------------------------------------------------------------
    def start_heartbeat(self) -> None:
        self._heartbeat = threading.Thread(target=self._heartbeat_loop, name="kv-heartbeat", daemon=True)
        self._heartbeat.start()

    @property
    def heartbeat_alive(self) -> bool:
        return self._heartbeat is not None and self._heartbeat.is_alive()

    def _heartbeat_loop(self) -> None:
        while not self.clock.wait(self._stop, self.config.heartbeat_interval):
            with self.connection_lock:
                addrs = list(self.prefill_info_table)
            for addr in addrs:
                self._probe(addr)
            self.heartbeat_rounds += 1

    def _probe(self, addr: str) -> None:
        if self.transport.health(addr):
            self.heartbeat_failures[addr] = 0
            self._on_heartbeat_success(addr)
            return
        self.heartbeat_failures[addr] = self.heartbeat_failures.get(addr, 0) + 1
        if self.heartbeat_failures[addr] >= self.config.heartbeat_max_failures:
            # Not in a try, as upstream: an exception here ends the heartbeat thread.
            self._handle_node_failure(addr)

    def _on_heartbeat_success(self, addr: str) -> None:
        """Mooncake-style pruning of rooms that were cleared (iterates a copy)."""
        with self.connection_lock:
            rooms = self.addr_to_rooms_tracker.get(addr)
            for room in list(rooms or ()):
                if room not in self.request_status:
                    rooms.discard(room)  # type: ignore[union-attr]

    def close(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self.clock.interrupt()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout)
