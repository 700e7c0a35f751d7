"""`KVManager` for the scenarios, built on upstream's own `CommonKVManager`.

The class is made per loaded version: `KVManager(ManagerAdapter, CommonKVManager)`.

Upstream code (run unchanged, from the wheel or tree):
- `CommonKVManager.__init__` in DECODE mode (with the stand-ins of `standins.py`),
  which creates `request_status`, `failure_records`, `connection_pool`,
  `prefill_info_table`, `addr_to_rooms_tracker` and their locks;
- `update_status`, `check_status`, `record_failure`, `_handle_node_failure` (the
  methods the `failed-resurrect` and `live-set-race` fixes changed), and
  `_on_heartbeat_success` where the version has it;
- `CommonKVReceiver.__init__` for `track_room` (tracks the room, writes Bootstrapping)
  and `CommonKVReceiver.clear` for `clear` where the version defines it there.

Adapter code (this file):
- the constructor signature `(transport, config, clock, hooks)`; the scenario's
  `config` replaces the env-derived `heartbeat_interval`, `max_failures` and
  `waiting_timeout` after upstream's constructor ran;
- the heartbeat thread: upstream's loop sleeps with `time.sleep` and probes with
  `requests`, so we run the same loop (snapshot the prefill table under the lock,
  probe `/health`, count failures, call upstream's `_handle_node_failure` at
  `max_failures`, not in a try) on the injected clock and transport;
- `_cleanup_room_tracking`: upstream mori's helper lives in the mori backend, not in
  `common/conn.py`; we implement the same steps against upstream's tracker, firing
  `cleanup_room_tracking.after_get` after fetching the live set;
- the `node_failure.after_room` hook: upstream's `_handle_node_failure` has no hook
  points, so `update_status` fires it after writing Failed while the same thread is
  inside `_handle_node_failure`: that is one step of upstream's per-room loop;
- `add_prefill` (what `try_ensure_parallel_info` leaves behind) and, for versions
  whose `CommonKVReceiver` has no `clear`, popping the room from `request_status`;
- for lesson `stale-bootstrap`: `listen` (the decode's PULL socket and KV memory, on
  the scenario's transport: upstream binds its socket in `__init__` and mooncake's
  decode thread handles what arrives), and running upstream's own
  `try_ensure_parallel_info` with its `GET /route` on the scenario's transport
  (`bound.py`; the receiver's adapter is `receiver.py`).
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

from reference.clock import Clock, RealClock
from reference.common.decode_inbox import DecodeInbox
from reference.config import ManagerConfig
from reference.dataplane import KVMemory
from reference.hooks import Hooks
from reference.messages import PrefillServerInfo
from reference.status import KVPoll
from reference.transport.base import Transport
from reference.upstream.bound import bound


class ManagerAdapter:
    """Mixin placed before upstream's `CommonKVManager` in the MRO (see the module doc)."""

    _upstream: ModuleType  # the loaded common/conn.py
    _upstream_base: ModuleType  # the loaded base/conn.py
    _tracking_receiver: type  # upstream CommonKVReceiver, made concrete
    # Upstream's CommonKVManager attributes the adapter reads.
    connection_lock: Any
    prefill_info_table: dict[str, Any]
    addr_to_rooms_tracker: Any
    heartbeat_failures: dict[str, int]
    session_pool: dict[str, Any]
    session_pool_lock: Any
    request_status: dict[int, Any]

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
        mode = self._upstream.DisaggregationMode.DECODE
        server_args = self._upstream.ServerArgs()
        super().__init__(_kv_args(self._upstream_base), mode, server_args, False)  # type: ignore[call-arg]
        self.heartbeat_interval = self.config.heartbeat_interval
        self.max_failures = self.config.heartbeat_max_failures
        self.waiting_timeout = self.config.waiting_timeout
        self.room_to_bootstrap_addr: dict[int, str] = {}  # mori's bookkeeping
        self.heartbeat_rounds = 0
        self._receivers: dict[int, Any] = {}
        self.inbox: DecodeInbox | None = None
        self._node_failure = threading.local()  # which addr this thread is failing, if any
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    # -- hook points around upstream's methods ---------------------------------------
    def update_status(self, bootstrap_room: int, status: Any) -> None:
        super().update_status(bootstrap_room, status)  # type: ignore[misc]
        failing = getattr(self._node_failure, "addr", None)
        if failing is not None and status == KVPoll.Failed:
            self.hooks.fire("node_failure.after_room", failing, bootstrap_room)

    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        self._node_failure.addr = failed_bootstrap_addr
        try:
            super()._handle_node_failure(failed_bootstrap_addr)  # type: ignore[misc]
        finally:
            self._node_failure.addr = None

    # -- what receivers and the prefill lookup do to the manager -----------------------
    def add_prefill(self, bootstrap_addr: str, info: PrefillServerInfo | None = None) -> None:
        with self.connection_lock:
            self.prefill_info_table[bootstrap_addr] = info or PrefillServerInfo()

    def try_ensure_parallel_info(self, bootstrap_addr: str) -> bool:
        with bound(now=self.clock.now, transport=self.transport):
            return bool(super().try_ensure_parallel_info(bootstrap_addr))  # type: ignore[misc]

    def listen(self, memory: KVMemory) -> DecodeInbox:
        inbox = DecodeInbox(self, memory)  # type: ignore[arg-type]
        inbox.endpoint = self.transport.bind_inbox(inbox.handle)
        self.transport.register_memory(inbox.session, memory)
        self.inbox = inbox
        return inbox

    def track_room(self, bootstrap_addr: str, bootstrap_room: int) -> None:
        self._receivers[bootstrap_room] = self._tracking_receiver(self, bootstrap_addr, bootstrap_room)
        self.room_to_bootstrap_addr[bootstrap_room] = bootstrap_addr

    def clear(self, bootstrap_room: int) -> None:
        receiver: Any = self._receivers.pop(bootstrap_room, None)
        receiver_cls = self._upstream.CommonKVReceiver
        if "clear" not in vars(receiver_cls):
            self.request_status.pop(bootstrap_room, None)
            return
        if receiver is None:  # a room written directly: a receiver shell for upstream's clear
            receiver = object.__new__(self._tracking_receiver)
            receiver.kv_mgr, receiver.bootstrap_room = self, bootstrap_room
        receiver_cls.clear(receiver)

    def _cleanup_room_tracking(self, bootstrap_room: int) -> None:
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

    # -- heartbeat: upstream's loop on the injected clock and transport ----------------
    def start_heartbeat(self) -> None:
        self._heartbeat = threading.Thread(target=self._heartbeat_loop, name="kv-heartbeat", daemon=True)
        self._heartbeat.start()

    @property
    def heartbeat_alive(self) -> bool:
        return self._heartbeat is not None and self._heartbeat.is_alive()

    def _heartbeat_loop(self) -> None:
        while not self.clock.wait(self._stop, self.heartbeat_interval):
            with self.connection_lock:
                addresses = list(self.prefill_info_table)
            for addr in addresses:
                self._probe(addr)
            self.heartbeat_rounds += 1

    def _probe(self, addr: str) -> None:
        if self.transport.health(addr):
            self.heartbeat_failures[addr] = 0
            on_success = getattr(self, "_on_heartbeat_success", None)
            if on_success is not None:
                on_success(addr)
        else:
            self.heartbeat_failures[addr] = self.heartbeat_failures.get(addr, 0) + 1
        if self.heartbeat_failures.get(addr, 0) >= self.max_failures:
            self._handle_node_failure(addr)  # not in a try, as upstream
            with self.session_pool_lock:
                self.session_pool.pop(addr, None)

    def close(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self.clock.interrupt()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout)
        context = getattr(self, "_zmq_ctx", None)
        if context is not None:
            context.term()


def _kv_args(base: ModuleType) -> Any:
    """Upstream's `KVArgs` for a decode rank that registers no memory."""
    args = base.KVArgs()
    values = {
        "engine_rank": 0, "kv_data_ptrs": [], "kv_data_lens": [], "kv_item_lens": [],
        "aux_data_ptrs": [], "aux_data_lens": [], "aux_item_lens": [], "state_item_lens": [],
        "kv_cache_dtype_str": "auto", "is_hybrid_mla_backend": False, "page_size": 1,
        "system_dp_rank": 0, "pp_rank": 0, "prefill_start_layer": 0, "ib_device": "", "gpu_id": 0,
    }  # fmt: skip
    for name, value in values.items():
        setattr(args, name, value)
    return args


def _concrete(cls: type) -> type:
    """`cls` with its abstract methods filled by stubs: the adapter only constructs
    and clears receivers, never polls them."""

    def unused(*_args: Any, **_kwargs: Any) -> Any:
        raise NotImplementedError("not driven by the upstream adapter")

    abstract: frozenset[str] = getattr(cls, "__abstractmethods__", frozenset())
    return type(f"Tracking{cls.__name__}", (cls,), dict.fromkeys(abstract, unused))


# Members the lessons drive that older versions keep in the backends, not in Common.
_BACKEND_ONLY = {
    "_handle_node_failure": "CommonKVManager has no _handle_node_failure (this version keeps it "
    "in the mooncake and nixl backends, which the adapter does not load)",
}


def manager_class(base: ModuleType, common: ModuleType, label: str) -> tuple[type, dict[str, str]]:
    """The scenarios' `KVManager` for one loaded version of `common/conn.py`, and the
    members it cannot drive on that version (`KVManager.<name>` -> reason)."""
    gaps = {
        f"KVManager.{name}": why
        for name, why in _BACKEND_ONLY.items()
        if not hasattr(common.CommonKVManager, name)
    }
    cls = type(
        "KVManager",
        (ManagerAdapter, common.CommonKVManager),
        {
            "__module__": f"reference.upstream[{label}]",
            "__doc__": f"Upstream {label} CommonKVManager, driven by reference.upstream.manager.",
            "_upstream": common,
            "_upstream_base": base,
            "_tracking_receiver": _concrete(common.CommonKVReceiver),
        },
    )
    return cls, gaps
