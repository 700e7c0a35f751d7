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
- `_cleanup_room_tracking(room)`, the room-tracking cleanup the scenarios park: up to
  0.5.19 upstream mori's own `MoriKVManager._cleanup_room_tracking`, run on this
  manager; from 0.5.20, where mori's helper is gone, the cleanup that release has:
  upstream's `CommonKVReceiver.clear` of the room's receiver (its tracker discard), or,
  while lesson `live-set-race`'s trigger is on, the old steps as adapter code
  (`_discard_without_the_lock`, a trigger only). `HookedTracker` fires
  `cleanup_room_tracking.after_get` when that cleanup has fetched the room set;
- the heartbeat's tracker prune on a successful probe: upstream's
  `_on_heartbeat_success` where the version has it; in 0.5.11 and 0.5.12 mooncake
  prunes inline in its heartbeat thread, which does not run here, so the adapter's
  loop does the same (drop the address's rooms that `request_status` no longer has);
- the `node_failure.after_room` hook: upstream's `_handle_node_failure` has no hook
  points, so `update_status` fires it after writing Failed while the same thread is
  inside `_handle_node_failure`: that is one step of upstream's per-room loop;
- `add_prefill` (what `try_ensure_parallel_info` leaves behind) and, for versions
  whose `CommonKVReceiver` has no `clear`, popping the room from `request_status`;
- for lesson `stale-bootstrap`: `listen` (the decode's PULL socket and KV memory, on
  the scenario's transport: upstream binds its socket in `__init__` and mooncake's
  decode thread handles what arrives), and running upstream's own
  `try_ensure_parallel_info` with its `GET /route` on the scenario's transport
  (`bound.py`; the receiver's adapter is `receiver.py`);
- a named configuration (`configs.py`; the default is upstream's defaults): `mla`
  passes `is_mla_backend=True` to upstream's `CommonKVManager.__init__`; `staging` sets
  `enable_staging` and, as mooncake's decode `__init__` does, upstream's
  `DecodeStagingContext` with upstream's `StagingAllocator` (`_Staging`: its GPU
  buffer is a host address range), and plays the decode scheduler's calls into
  upstream's `DecodeStagingHandler` (`create`, `register_decode_req` before a staged
  request's `send_metadata`, `unregister_decode_req` at its end); a `STAGING_REQ` that
  reaches the decode's socket goes to upstream's `_handle_staging_req`, as mooncake's
  decode thread sends it there; `prefill_complete` runs upstream's `__init__` (and the
  receivers' calls, `receiver.py`) under that allocation policy (`get_disagg()`, bound per
  call: `bound.py`), with a KV pool of full attention only (`state_types` empty), which
  the policy requires.
"""

from __future__ import annotations

import dataclasses
import struct
import threading
import types
from collections import defaultdict
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
from reference.upstream.bound import BindingThreading, Stopped, bound
from reference.upstream.configs import DEFAULT, Configuration
from reference.upstream.configs import settings as disagg_settings
from reference.upstream.errors import UpstreamError
from reference.upstream.loader import UpstreamLoad
from reference.upstream.zmq_wire import Relays, close_when_collected, failing, relay_disconnects


class ManagerAdapter:
    """Mixin placed before upstream's `CommonKVManager` in the MRO (see the module doc)."""

    _upstream: ModuleType  # the loaded file that defines CommonKVManager
    _common_init: Any  # upstream's CommonKVManager.__init__
    _kv_args: Any  # makes upstream's KVArgs for a decode without KV memory
    _tracking_receiver: type  # upstream's (mooncake) receiver, made concrete
    _mori_cleanup: Any  # upstream mori's _cleanup_room_tracking, or None
    _triggers: Any  # wiring.Triggers of this loaded version
    _label: str  # e.g. sglang-0.5.19
    _info_fields: frozenset[str] | None  # the fields of this version's PrefillServerInfo
    _configuration: Configuration = DEFAULT  # configs.py: upstream's defaults unless named
    _disagg: Any  # upstream's get_disagg() in that configuration (None: upstream's defaults)
    _load: UpstreamLoad
    _upstream_heartbeat: bool  # upstream's own heartbeat loop runs (see start_heartbeat)
    _inline_heartbeat: types.CodeType | None  # 0.5.11, 0.5.12: mooncake's inline loop
    _inline_globals: dict[str, Any]
    kv_args: Any  # upstream: the decode rank's KV buffers, as its register frame reports them
    local_ip: str
    rank_port: int
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
        args = self._kv_args()
        self._disagg = disagg_settings(self._configuration)
        if self._disagg is not None:
            args.state_types = []  # a full-attention KV pool (what prefill_complete supports)
        # Upstream's CommonKVManager.__init__; the backend's own __init__ (mooncake's
        # transfer engine, buffer registration and threads) is what cannot run here.
        with bound(disagg=self._disagg, env=dict(self._configuration.env) or None):
            self._common_init(self, args, mode, server_args, self._configuration.mla)
        self.engine = _TransferEngine(self)  # mooncake's decode reads only its session id
        self.enable_staging = self._configuration.staging
        self._staging_adapter: _Staging | None = _Staging(self) if self.enable_staging else None
        self.addr_to_rooms_tracker = HookedTracker(self, self.addr_to_rooms_tracker)
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
        self._sleeps = 0
        self.relays = Relays(transport)  # the real endpoints upstream's PUSH sockets connect to
        close_when_collected(self, self.relays)  # a world that never closes its manager

    # -- hook points around upstream's methods ---------------------------------------
    def update_status(self, bootstrap_room: int, status: Any) -> None:
        # The scenarios' KVPoll is an IntEnum; upstream's code gets upstream's own value.
        super().update_status(bootstrap_room, self._status(status))  # type: ignore[misc]
        failing = getattr(self._node_failure, "addr", None)
        if failing is not None and status == KVPoll.Failed:
            self.hooks.fire("node_failure.after_room", failing, bootstrap_room)

    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        self._node_failure.addr = failed_bootstrap_addr
        try:
            with failing(self.relays):  # its disconnect_endpoint calls reach the relays (zmq_wire)
                super()._handle_node_failure(failed_bootstrap_addr)  # type: ignore[misc]
        finally:
            self._node_failure.addr = None

    def _status(self, status: Any) -> Any:
        return getattr(self._upstream.KVPoll, KVPoll(status).name)

    def late_abort(self, bootstrap_room: int) -> None:
        """A request's abort that lands after its room was cleared: upstream's own
        `CommonKVReceiver.abort()` on a receiver of that room (its `__init__` is not
        run again: that would re-open the room)."""
        receiver: Any = object.__new__(self._tracking_receiver)
        receiver.kv_mgr, receiver.bootstrap_room = self, bootstrap_room
        receiver.bootstrap_addr = self.room_to_bootstrap_addr.get(bootstrap_room, _NO_ADDR)
        receiver.conclude_state = receiver.init_time = receiver.bootstrap_infos = None
        receiver.abort_notified = False
        with bound(now=self.clock.now, transport=self.transport):
            receiver.abort()

    # -- what receivers and the prefill lookup do to the manager -----------------------
    def add_prefill(self, bootstrap_addr: str, info: PrefillServerInfo | None = None) -> None:
        with self.connection_lock:
            self.prefill_info_table[bootstrap_addr] = info or PrefillServerInfo()

    def try_ensure_parallel_info(self, bootstrap_addr: str) -> bool:
        with bound(now=self.clock.now, transport=self.transport, info_fields=self._info_fields):
            return bool(super().try_ensure_parallel_info(bootstrap_addr))  # type: ignore[misc]

    def listen(self, memory: KVMemory) -> DecodeInbox:
        inbox = DecodeInbox(self, memory)  # type: ignore[arg-type]
        staging = self._staging_adapter
        inbox.endpoint = self.transport.bind_inbox(
            inbox.handle if staging is None else staging.dispatch(inbox)
        )
        self.transport.register_memory(inbox.session, memory)
        self.inbox = inbox
        # Upstream's decode PULL socket and KV buffer, as its register frame reports them.
        self.local_ip, _, port = inbox.endpoint.rpartition(":")
        self.rank_port = int(port)
        self.kv_args.kv_data_ptrs, self.kv_args.kv_item_lens = [memory.region_ptr(0)], [memory.item_len]
        if staging is not None:
            staging.listen()
        return inbox

    def get_session_id(self) -> str:
        get = getattr(super(), "get_session_id", None)
        return str(get()) if get is not None else self.engine.get_session_id()

    def track_room(self, bootstrap_addr: str, bootstrap_room: int) -> None:
        self._receivers[bootstrap_room] = self._tracking_receiver(self, bootstrap_addr, bootstrap_room)
        self.room_to_bootstrap_addr[bootstrap_room] = bootstrap_addr

    def clear(self, bootstrap_room: int) -> None:
        if self._staging_adapter is not None:
            self._staging_adapter.request_ended(bootstrap_room)
        receiver: Any = self._receivers.pop(bootstrap_room, None)
        if receiver is None:  # a room the scenario wrote directly: a receiver shell for upstream's clear
            receiver = object.__new__(self._tracking_receiver)
            receiver.kv_mgr, receiver.bootstrap_room = self, bootstrap_room
            receiver.bootstrap_addr = self.room_to_bootstrap_addr.get(bootstrap_room, _NO_ADDR)
            receiver.conclude_state = receiver.init_time = None
        receiver.clear()
        if not self.addr_to_rooms_tracker.get(_NO_ADDR, True):
            self.addr_to_rooms_tracker.pop(_NO_ADDR, None)  # what the shell's clear left behind

    def _cleanup_room_tracking(self, bootstrap_room: int) -> None:
        """The room-tracking cleanup of this release (see the module doc): mori's own up
        to 0.5.19; from 0.5.20 upstream's `CommonKVReceiver.clear` of the room's
        receiver, or the old steps as adapter code while live-set-race's trigger is on."""
        self.addr_to_rooms_tracker.cleanup_thread = threading.get_ident()
        try:
            if self._mori_cleanup is not None:
                self._mori_cleanup(self, bootstrap_room)
            elif self._triggers.active("live-set-race"):
                _discard_without_the_lock(self, bootstrap_room)
            else:
                receiver = self._receivers.pop(bootstrap_room, None)
                if receiver is not None:
                    receiver.clear()
        finally:
            self.addr_to_rooms_tracker.cleanup_thread = None

    # -- heartbeat: upstream's own loop on the injected clock and transport ------------
    def start_heartbeat(self) -> None:
        """Upstream's own heartbeat loop, in its own thread, on the scenario's clock and
        transport: `_start_heartbeat_checker_thread` where mooncake's decode starts it;
        in 0.5.11 and 0.5.12, where the loop is a closure of mooncake's
        `start_decode_thread` (which also starts the decode thread), that closure's own
        code, made a function over this manager; the adapter's loop only where neither is."""
        if hasattr(self, "_heartbeat_shutdown"):  # 0.5.23: the loop waits on this event
            self._heartbeat_shutdown = _ClockedEvent(self.clock, self._stop)
        before = set(threading.enumerate())
        with bound(now=self.clock.now, transport=self.transport, sleep=self._heartbeat_sleep):
            if self._upstream_heartbeat:
                self._start_heartbeat_checker_thread()  # type: ignore[attr-defined]
            elif self._inline_heartbeat is not None:
                body = types.FunctionType(
                    self._inline_heartbeat,
                    self._inline_globals,
                    "heartbeat_checker",
                    None,
                    (types.CellType(self),),
                )
                BindingThreading.Thread(target=body, name="heartbeat_checker", daemon=True).start()
            else:
                raise UpstreamError(f"{self._label}: no upstream heartbeat loop found")
        started = [t for t in threading.enumerate() if t not in before]
        self._heartbeat = started[0] if started else None

    def _heartbeat_sleep(self, seconds: float) -> None:
        """Upstream's `time.sleep(self.heartbeat_interval)` on the scenario's clock; a
        round ended each time it sleeps again. Stopped: the loop ends (`bound.Stopped`)."""
        self.heartbeat_rounds, self._sleeps = self._sleeps, self._sleeps + 1
        if self.clock.wait(self._stop, seconds):
            raise Stopped

    @property
    def heartbeat_alive(self) -> bool:
        return self._heartbeat is not None and self._heartbeat.is_alive()

    def close(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self.clock.interrupt()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout)
        self.relays.close()
        context = getattr(self, "_zmq_ctx", None)
        if context is not None:
            context.term()


class _ClockedEvent:
    """Upstream's `_heartbeat_shutdown` (a `threading.Event`, 0.5.23) on the scenario's
    clock: `wait(seconds)` is the clock's wait, set by the manager's `close`."""

    def __init__(self, clock: Clock, stop: threading.Event) -> None:
        self.clock, self.stop = clock, stop

    def is_set(self) -> bool:
        return self.stop.is_set()

    def set(self) -> None:
        self.stop.set()
        self.clock.interrupt()

    def wait(self, seconds: float | None = None) -> bool:
        return self.clock.wait(self.stop, seconds if seconds is not None else float("inf"))


class _Staging:
    """Configuration `staging` (see the module doc): upstream's decode staging context,
    allocator and handler on this manager, and the scheduler's calls into the handler."""

    def __init__(self, manager: Any) -> None:
        load = manager._load
        self.manager = manager
        context = load.get("DecodeStagingContext")
        allocator = load.get("StagingAllocator")
        buffers = load.module(load.where("StagingAllocator")[0])
        self.handler_class = load.get("DecodeStagingHandler")
        manager._staging_ctx = context()  # as mooncake's decode __init__, then its allocator
        with _bound_global(buffers, "StagingBuffer", _HostBuffer), load.importing():
            manager._staging_ctx.allocator = allocator(STAGING_RING, "cpu", 0)
        manager._staging_handler = None
        # rank endpoint -> (base, size) of the staging ring its last register frame named
        self.rings: dict[str, tuple[int, int]] = {}

    def dispatch(self, inbox: DecodeInbox) -> Any:
        """What reaches the decode's socket: a `STAGING_REQ` goes to upstream's
        `_handle_staging_req`, as mooncake's decode thread sends it; the rest to the inbox."""
        manager = self.manager

        def handle(frames: list[bytes]) -> None:
            if frames and frames[0] == b"STAGING_REQ":
                with bound(now=manager.clock.now, transport=manager.transport), manager._load.importing():
                    manager._handle_staging_req(frames)
            else:
                inbox.handle(frames)

        return handle

    def listen(self) -> None:
        """The scheduler's `_init_staging_handler`, after the decode's `_init_kv_manager`
        set its KV buffers and head count (one head, one layer's K and V)."""
        manager = self.manager
        manager.kv_args.kv_head_num = 1
        manager.kv_args.kv_item_lens = manager.kv_args.kv_item_lens * 2
        kv = [_HostKV()]  # the KV pool's per-layer tensors: where they live, no bytes
        layers = {"slot_layer_ids": [0, 0]} if _takes(manager.set_kv_buffer_tensors, "slot_layer_ids") else {}
        manager.set_kv_buffer_tensors(kv, kv, manager.kv_args.page_size, **layers)
        handlers = manager._load.module(manager._load.where("DecodeStagingHandler")[0])
        with manager._load.importing(), _bound_global(handlers, "torch", _HOST_TORCH):
            manager._staging_handler = self.handler_class.create(manager, None, 0)

    def registered(self, info: dict, base: bytes, size: bytes) -> None:
        """What a prefill rank learns of the ring from upstream's register frame (its
        staging base pointer and total size; empty frames: no ring)."""
        (ptr,) = struct.unpack("Q", base) if len(base) == 8 else (0,)
        self.rings[f"tcp://{info['rank_ip']}:{info['rank_port']}"] = (ptr, int(size) if size.isdigit() else 0)

    def before_metadata(self, receiver: Any) -> None:
        """The scheduler's `register_decode_req` for a staged request, before its
        `send_metadata` (upstream's `pop_preallocated`)."""
        if getattr(receiver, "require_staging", False):
            request = _SchedulerRequest(receiver)
            self.manager._staging_handler.register_decode_req(receiver.bootstrap_room, request)

    def request_ended(self, bootstrap_room: int) -> None:
        """The scheduler's `unregister_decode_req` when a staged request leaves its queue
        (upstream's `pop_transferred`: for a staging room, before the receiver's `clear`,
        which a scenario calls next; `clear` here calls it too, for a room cleared there)."""
        manager = self.manager
        with bound(now=manager.clock.now, transport=manager.transport), manager._load.importing():
            if manager._staging_handler.is_staging_room(bootstrap_room):
                manager._staging_handler.unregister_decode_req(bootstrap_room)


STAGING_RING = 1 << 20  # bytes of the decode's staging ring (upstream's default: 4096 MB of GPU memory)


class _HostBuffer:
    """Stand-in for upstream's `StagingBuffer` (a GPU tensor): an address range only;
    no bytes move through it here (the ring's offsets are what the checks read)."""

    def __init__(self, size_bytes: int, device: str, gpu_id: int, custom_mem_pool: Any = None) -> None:
        self.size_bytes, self.gpu_id = size_bytes, gpu_id
        self.device = types.SimpleNamespace(type=device)  # a torch.device's `type`
        self.data_ptr = 0x7F00_0000_0000

    def get_ptr(self) -> int:
        return self.data_ptr

    def get_size(self) -> int:
        return self.size_bytes


class _HostKV:
    """Stand-in for one of the KV pool's GPU tensors, as the staging handler reads it at
    construction (0.5.23: its device and index)."""

    device = types.SimpleNamespace(type="cpu", index=0)


# Stand-in for the `torch` the staging handler's constructor asks for the device module
# (0.5.23: `torch.get_device_module`, used by the scatter, which does not run here).
_HOST_TORCH = types.SimpleNamespace(get_device_module=lambda device: None)


class _SchedulerRequest:
    """The decode scheduler's `DecodeRequest` as upstream's staging handler reads it:
    its receiver and its request's protected prefix (none: a fresh request)."""

    def __init__(self, receiver: Any) -> None:
        self.kv_receiver = receiver
        self.req = types.SimpleNamespace(
            kv=types.SimpleNamespace(cache_protected_len=0), rid=str(receiver.bootstrap_room)
        )


class _bound_global:
    """`module.name` replaced by `value` for one block (a stand-in at construction)."""

    def __init__(self, module: ModuleType, name: str, value: Any) -> None:
        self.module, self.name, self.value = module, name, value

    def __enter__(self) -> None:
        self.saved = vars(self.module)[self.name]
        setattr(self.module, self.name, self.value)

    def __exit__(self, *_exc: object) -> None:
        setattr(self.module, self.name, self.saved)


def _discard_without_the_lock(manager: Any, bootstrap_room: int) -> None:
    """What mori's cleanup did, for versions that no longer have it (adapter code)."""
    addr = manager.room_to_bootstrap_addr.pop(bootstrap_room, None)
    rooms = manager.addr_to_rooms_tracker.get(addr) if addr is not None else None
    if rooms is not None:
        rooms.discard(bootstrap_room)
        if not rooms:
            manager.addr_to_rooms_tracker.pop(addr, None)


_NO_ADDR = "no-bootstrap-addr:0"  # the shell receiver's address for a room written directly


class HookedTracker(defaultdict):
    """Upstream's `addr_to_rooms_tracker` (a `defaultdict(set)`) plus one hook point:
    `cleanup_room_tracking.after_get` fires when the room-tracking cleanup, on the
    thread the adapter marks, has fetched a room set (`get` in mori's cleanup, `[addr]`
    in `CommonKVReceiver.clear`). Upstream's code has no hook points; this one sits in
    the data structure, not in the code."""

    def __init__(self, manager: Any, rooms: dict) -> None:
        super().__init__(set, rooms)
        self.manager = manager
        self.cleanup_thread: int | None = None

    def get(self, key: Any, default: Any = None) -> Any:
        value = super().get(key, default)
        self._fetched(key)
        return value

    def __getitem__(self, key: Any) -> Any:
        value = super().__getitem__(key)
        self._fetched(key)
        return value

    def _fetched(self, key: Any) -> None:
        if self.cleanup_thread is not None and self.cleanup_thread == threading.get_ident():
            self.manager.hooks.fire("cleanup_room_tracking.after_get", key)


class _TransferEngine:
    """Stand-in for mooncake's TransferEngine on a decode: its session id is the decode
    inbox's (the scenario's data plane), the only thing the receiver asks it."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    def get_session_id(self) -> str:
        inbox = self.manager.inbox
        return inbox.session if inbox is not None else "decode-without-kv-memory"


def _kv_args(cls: type) -> Any:
    """Upstream's `KVArgs` for a decode rank that registers no memory."""
    args = cls()
    values = {
        "engine_rank": 0, "kv_data_ptrs": [], "kv_data_lens": [], "kv_item_lens": [],
        "aux_data_ptrs": [], "aux_data_lens": [], "aux_item_lens": [], "state_item_lens": [],
        "state_data_ptrs": [], "state_layer_ids": [], "kv_layer_ids": [], "state_type": "none",
        "kv_cache_dtype_str": "auto", "is_hybrid_mla_backend": False, "page_size": 1,
        "system_dp_rank": 0, "pp_rank": 0, "prefill_start_layer": 0, "ib_device": "", "gpu_id": 0,
    }  # fmt: skip
    for name, value in values.items():
        setattr(args, name, value)
    return args


def manager_class(
    load: UpstreamLoad, triggers: Any, configuration: Configuration = DEFAULT
) -> tuple[type, dict[str, str]]:
    """The scenarios' `KVManager` for one loaded version: on mooncake's decode manager
    (upstream's default backend) where the version has it, else `CommonKVManager`; and
    the members it cannot drive on that version (`KVManager.<name>` -> reason). Upstream's
    defaults unless `configuration` names another (`configs.py`)."""
    common = load.get("CommonKVManager")
    base = load.get("MooncakeKVManager") if load.has("MooncakeKVManager") else common
    receiver = (
        load.get("MooncakeKVReceiver") if load.has("MooncakeKVReceiver") else load.get("CommonKVReceiver")
    )
    relay_disconnects(load.get("CommonKVReceiver"))  # its socket cache is keyed by relay endpoints
    mori = load.get("MoriKVManager") if load.has("MoriKVManager") else None
    mori_cleanup = vars(mori).get("_cleanup_room_tracking") if mori is not None else None
    gaps = {}
    if not hasattr(base, "_handle_node_failure"):
        gaps["KVManager._handle_node_failure"] = f"not present in {load.source.label}: _handle_node_failure"
    kv_args_cls = load.get("KVArgs")
    info = load.get("PrefillServerInfo") if load.has("PrefillServerInfo") else None
    fields = frozenset(f.name for f in dataclasses.fields(info)) if dataclasses.is_dataclass(info) else None
    cls = type(
        "KVManager",
        (ManagerAdapter, base),
        {
            "__module__": f"reference.upstream[{load.source.label}]",
            "__doc__": f"Upstream {load.source.label} {base.__name__}, driven by reference.upstream.manager.",
            "_upstream": load.module(load.where("CommonKVManager")[0]),
            "_common_init": staticmethod(common.__init__),
            "_kv_args": staticmethod(lambda: _kv_args(kv_args_cls)),
            "_tracking_receiver": _concrete(receiver),
            "_mori_cleanup": staticmethod(mori_cleanup) if mori_cleanup is not None else None,
            "_triggers": triggers,
            "_configuration": configuration,
            "_load": load,
            "_label": load.source.label,
            "_info_fields": fields,
            "_upstream_heartbeat": _calls(base, "start_decode_thread", "_start_heartbeat_checker_thread"),
            "_inline_heartbeat": _closure(base, "start_decode_thread", "heartbeat_checker"),
            "_inline_globals": getattr(getattr(base, "start_decode_thread", None), "__globals__", {}),
        },
    )
    return cls, gaps


def _takes(function: Any, name: str) -> bool:
    """Whether upstream's `function` has a parameter `name` (the release's signature)."""
    code = getattr(function, "__code__", None)
    return code is not None and name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]


def _calls(cls: type, method: str, name: str) -> bool:
    """Whether upstream's `cls.method` calls `self.name` (its code names it): mooncake's
    decode starts `CommonKVManager._start_heartbeat_checker_thread` from 0.5.13; in 0.5.11
    and 0.5.12 its heartbeat is a closure of `start_decode_thread` itself."""
    code = getattr(getattr(cls, method, None), "__code__", None)
    return code is not None and name in code.co_names


def _closure(cls: type, method: str, name: str) -> types.CodeType | None:
    """The code of the closure `name` that upstream's `cls.method` defines, if its only
    free variable is `self` (mooncake's inline heartbeat in 0.5.11 and 0.5.12)."""
    code = getattr(getattr(cls, method, None), "__code__", None)
    for const in code.co_consts if code is not None else ():
        if isinstance(const, types.CodeType) and const.co_name == name and const.co_freevars == ("self",):
            return const
    return None


def _concrete(cls: type) -> type:
    """`cls` with its abstract methods filled by stubs: the adapter only constructs
    and clears these receivers, never polls them."""

    def unused(*_args: Any, **_kwargs: Any) -> Any:
        raise NotImplementedError("not driven by the upstream adapter")

    abstract: frozenset[str] = getattr(cls, "__abstractmethods__", frozenset())
    return type(f"Tracking{cls.__name__}", (cls,), dict.fromkeys(abstract, unused))
