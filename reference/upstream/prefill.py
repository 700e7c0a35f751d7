"""Upstream's prefill-side manager and sender, for configurations `prefill_complete` and
`deferred_release` (`configs.py`).

A room's prefill side lives only in a manager in PREFILL mode, which the lessons' decode
never builds: under `--disaggregation-decode-allocation-policy prefill_complete` its
rendezvous table (`DeferredBootstrap`, 0.5.23) joins each room's sender to the decode
endpoint that bootstrapped it, and `update_status` tells that endpoint when the room fails
(`_notify_bootstrap`); under `SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE=1` it holds
a decode's ABORT_ACK until the room's transfer drained, and never sends it for a room
whose transfer failed unsettled (a poisoned room) until a new request reuses the room's id
(`update_status` resets that state). This module builds that manager.

Upstream code (run unchanged, from the wheel or tree):
- mooncake's `MooncakeKVManager.__init__` in PREFILL mode (with `CommonKVManager.__init__`,
  its `register_to_bootstrap` PUT, its `DeferredBootstrap`, its transfer queue, executor and
  **transfer worker thread**, `transfer_worker`, which sends through the engine, poisons a
  room on a failed send and concludes it), `update_status`, the **bootstrap thread's own
  loop** (the `bootstrap_thread` closure of `start_prefill_thread`, over upstream's
  `_make_worker_recv`: `_handle_bootstrap_message`, the registration and metadata frames,
  `_handle_abort_notification` and its deferred ACK), `_notify_bootstrap`,
  `send_kv_status_message`, `_send_abort_ack` on real pyzmq PUSH sockets;
- `CommonKVSender.__init__`, `init`, `send`, `abort`, `mark_prefill_complete`, `clear`.

Adapter code (this file), and why:
- the transfer engine (`init_engine`): mooncake's needs RDMA or TCP peers and registered
  memory; the stand-in registers nothing and reports every transfer failed
  (`batch_transfer_sync` returns -1, as mooncake does when a batch times out still
  running), the one answer the checks need, so no bytes move;
- the manager's PULL socket (`start_prefill_thread`): upstream's bootstrap loop runs on the
  caller's thread when the adapter delivers a decode's message (`deliver`), reading it from
  `_ControlSocket` through upstream's own `_make_worker_recv`; the loop ends when nothing is
  left to read (the adapter's `_Drained`), instead of blocking on a socket;
- the KV pool a prefill registers: two address ranges (one layer's K and V) and one aux
  range, full attention only (what `prefill_complete` supports); no bytes;
- the bootstrap server that answers the prefill's `PUT /route`: the registration is
  recorded and answered 200 (`bound.py`'s `put`);
- the decode (`DecodeEndpoint`): a real PULL socket on 127.0.0.1 whose messages are read
  back with upstream's own parsers (`parse_kv_status_message`, `AbortAck.from_zmq`), each
  wait bounded, and the messages a decode sends, in upstream mooncake's frames: its
  registration, a room's metadata, BOOTSTRAP (`init`'s under `prefill_complete`) and ABORT
  (upstream's own `AbortNotification`);
- the sender is `CommonKVSender` (its mooncake subclass does not load here: its module
  defines it with trace stages the tracing stand-in lacks; mooncake's `send` only calls
  `CommonKVSender.send`). The configurations are offered only where that holds
  (`configs._sender_is_common`: mooncake's sender overrides no method the checks drive but
  a `send` that only delegates; not 0.5.22, whose sender enqueues in its own `send`).
"""

from __future__ import annotations

import contextlib
import struct
import types
from typing import Any

import zmq

from reference.status import KVPoll
from reference.upstream.bound import bound
from reference.upstream.configs import Configuration, settings
from reference.upstream.loader import UpstreamLoad
from reference.upstream.standins import Settings

WAIT_MS = 5000  # the longest a read of the decode's endpoint waits for a message it expects
QUIET_MS = 200  # after those, how long it waits for one more
ITEM = 64  # bytes per KV page of the prefill's pool (and the decode's)


# The settings mooncake's prefill `__init__` and transfer worker read, at upstream's defaults
# (`environ.py`): no custom memory pool, TCP, no staging, no failed-session probe, aux over
# the engine; one transfer queue (the checks send one room at a time).
PREFILL_ENV: dict[str, Any] = {
    "SGLANG_MOONCAKE_CUSTOM_MEM_POOL": None,
    "MOONCAKE_PROTOCOL": "tcp",
    "SGLANG_DISAGG_STAGING_BUFFER": False,
    "SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES": 1 << 20,
    "SGLANG_ENABLE_FAILED_SESSION_PROBE": False,
    "SGLANG_MOONCAKE_SEND_AUX_TCP": False,
    "SGLANG_DISAGGREGATION_THREAD_POOL_SIZE": 1,
    "SGLANG_DISAGGREGATION_QUEUE_SIZE": 1,
}


class _Drained(Exception):
    """Nothing left for upstream's bootstrap loop to read: the adapter's delivery ends."""


class _ControlSocket:
    """The prefill manager's PULL socket as its bootstrap loop reads it (see the module doc)."""

    def __init__(self) -> None:
        self.pending: list[list[bytes]] = []

    def recv_multipart(self) -> list[bytes]:
        if not self.pending:
            raise _Drained
        return self.pending.pop(0)

    def close(self, linger: int | None = None) -> None:
        self.pending.clear()


class _FailingEngine:
    """Stand-in for mooncake's TransferEngine on a prefill (see the module doc)."""

    def get_session_id(self) -> str:
        return "127.0.0.1:17000"

    def batch_register(self, _ptrs: list[int], _lens: list[int]) -> int:
        return 0

    def batch_deregister(self, _ptrs: list[int]) -> int:
        return 0

    def batch_transfer_sync(self, *_args: Any) -> int:
        return -1


class PrefillAdapter:
    """Mixin placed before upstream's prefill manager in the MRO (see the module doc)."""

    _backend_init: Any
    _kv_args: Any
    _sender: type
    _upstream: Any
    _disagg: Settings | None
    _env: dict[str, Any]
    _bootstrap_loop: types.CodeType
    _loop_globals: dict[str, Any]

    def __init__(self) -> None:
        self.registrations: list[Any] = []  # what its PUT /route told the bootstrap server
        self._control = _ControlSocket()
        mode = self._upstream.DisaggregationMode.PREFILL
        with self._bound():
            self._backend_init(self, self._pool(), mode, self._upstream.ServerArgs(), False)

    def _pool(self) -> Any:
        args = self._kv_args()
        args.state_types, args.state_data_lens = [], []  # full attention only
        args.kv_data_ptrs, args.kv_data_lens, args.kv_item_lens = (
            [0x10000, 0x18000],
            [1 << 15] * 2,
            [ITEM] * 2,
        )
        args.aux_data_ptrs, args.aux_data_lens, args.aux_item_lens = [0x20000], [1 << 12], [8]
        return args

    def _bound(self) -> Any:
        return bound(disagg=self._disagg, put=self._registered, env=self._env)

    def _registered(self, _url: str, payload: Any) -> int:
        self.registrations.append(payload)
        return 200

    def init_engine(self) -> None:
        self.engine = _FailingEngine()

    def start_prefill_thread(self) -> None:
        """Upstream's bootstrap loop, made a function over this manager and the reader
        upstream's `_make_worker_recv` makes of `_ControlSocket` (not started: `deliver`)."""
        self.server_socket = self._control
        recv = self._make_worker_recv(self._control)  # type: ignore[attr-defined]
        cells = {"recv": types.CellType(recv), "self": types.CellType(self)}
        self._reader = types.FunctionType(
            self._bootstrap_loop,
            self._loop_globals,
            "bootstrap_thread",
            None,
            tuple(cells[name] for name in self._bootstrap_loop.co_freevars),
        )

    def deliver(self, frames: list[bytes]) -> None:
        """A decode's message on the manager's socket: upstream's bootstrap loop reads it."""
        self._control.pending.append(frames)
        with self._bound(), contextlib.suppress(_Drained):
            self._reader()

    def open(self, bootstrap_room: int, bootstrap_addr: str = "127.0.0.1:8998") -> Any:
        """Upstream's sender for a request of `bootstrap_room` (the prefill scheduler's)."""
        with self._bound():
            return self._sender(self, bootstrap_addr, bootstrap_room)

    def call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        """`method(*args, **kwargs)` (a sender's or this manager's) under its settings."""
        with self._bound():
            return method(*args, **kwargs)

    def update_status(self, bootstrap_room: int, status: Any) -> None:
        """Upstream's `update_status`, given upstream's own `KVPoll` value (never our IntEnum)."""
        with self._bound():
            super().update_status(bootstrap_room, getattr(self._upstream.KVPoll, KVPoll(status).name))  # type: ignore[misc]

    def close(self) -> None:
        """Upstream's `teardown` (its workers stopped and joined, its sockets closed)."""
        with self._bound():
            self.teardown()  # type: ignore[attr-defined]


class DecodeEndpoint:
    """A decode as the prefill sees it (see the module doc): its control endpoint, a real
    PULL socket on 127.0.0.1, and the messages it sends."""

    def __init__(self, manager: Any, tp_rank: int = 0, tp_size: int = 1) -> None:
        self.manager, self.tp_rank, self.tp_size = manager, tp_rank, tp_size
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.PULL)
        self.port = self.socket.bind_to_random_port("tcp://127.0.0.1")
        self.ip = "127.0.0.1"
        self.session = f"127.0.0.1:{17001 + tp_rank}"  # its transfer-engine session id
        self._pack = manager._loop_globals["pack_int_lists"]  # upstream's frame packing

    def _address(self) -> list[bytes]:
        return [self.ip.encode("ascii"), str(self.port).encode("ascii"), self.session.encode("ascii")]

    def registration(self) -> list[bytes]:
        """Its KV registration (room "None"): one layer's K and V, one aux buffer, its TP rank."""
        kv, aux = struct.pack("2Q", 0x90000, 0x98000), struct.pack("1Q", 0xA0000)
        tp = [str(self.tp_rank).encode(), str(self.tp_size).encode()]
        return [b"None", *self._address(), kv, aux, self._pack([], "Q"), *tp, str(ITEM).encode()]

    def metadata(self, bootstrap_room: int) -> list[bytes]:
        """Its metadata for a room: two destination pages, aux slot 0, and the answers the
        room's prefill rank waits for (one per decode rank reading it)."""
        import numpy as np  # the `[upstream]` extra; imported where upstream code needs it

        pages = np.array([3, 4], dtype=np.int32).tobytes()
        room = str(bootstrap_room).encode("ascii")
        return [room, *self._address(), pages, b"0", self._pack([], "i"), str(self.tp_size).encode()]

    def bootstrap(self, bootstrap_room: int) -> list[bytes]:
        """The decode receiver's BOOTSTRAP for the room (upstream's `init` under prefill_complete)."""
        return [b"BOOTSTRAP", str(bootstrap_room).encode("ascii"), *self._address()[:2]]

    def abort(self, bootstrap_room: int, generation: int) -> list[bytes]:
        """Its ABORT for the room, with the generation its deferred release armed."""
        notification = self.manager._abort_notification
        return list(notification(bootstrap_room, self.ip, self.port, generation).to_zmq())

    def told(self, bootstrap_room: int, expect: int) -> list[str]:
        """What the room's decode was told, in order (statuses by name, `ABORT_ACK <generation>`),
        read with upstream's parsers: waits for `expect` messages, then for more, each wait bounded."""
        told: list[str] = []
        while self.socket.poll(WAIT_MS if len(told) < expect else QUIET_MS):
            said = self._read(self.socket.recv_multipart())
            if said is not None and said[0] == bootstrap_room:
                told.append(said[1])
        return told

    def _read(self, frames: list[bytes]) -> tuple[int, str] | None:
        if frames and frames[0] == b"ABORT_ACK":
            ack = self.manager._abort_ack.from_zmq(frames)
            return None if ack is None else (ack.room, f"ABORT_ACK {ack.generation}")
        parsed = self.manager.parse_kv_status_message(frames)
        return None if parsed is None else (parsed[0], KVPoll(parsed[1]).name)  # upstream's KVPoll ints

    def close(self) -> None:
        self.socket.close(linger=0)
        self.context.term()


def prefill_manager_class(load: UpstreamLoad, configuration: Configuration) -> type:
    """Upstream's mooncake prefill manager in `configuration`, driven as the module doc says."""
    from reference.upstream.manager import _concrete, _kv_args

    base = load.get("MooncakeKVManager")
    kv_args_cls = load.get("KVArgs")
    loop = next(
        const
        for const in base.start_prefill_thread.__code__.co_consts
        if isinstance(const, types.CodeType) and const.co_name == "bootstrap_thread"
    )
    return type(
        "PrefillKVManager",
        (PrefillAdapter, base),
        {
            "__module__": f"reference.upstream[{load.source.label}]",
            "__doc__": f"Upstream {load.source.label} MooncakeKVManager in PREFILL mode, driven by "
            "reference.upstream.prefill.",
            "_upstream": load.module(load.where("CommonKVManager")[0]),
            "_backend_init": staticmethod(base.__init__),
            "_kv_args": staticmethod(lambda: _kv_args(kv_args_cls)),
            "_sender": _concrete(load.get("CommonKVSender")),
            "_disagg": settings(configuration),
            "_env": {**PREFILL_ENV, **dict(configuration.env)},
            "_bootstrap_loop": loop,
            "_loop_globals": base.start_prefill_thread.__globals__,
            "_abort_notification": load.get("AbortNotification"),
            "_abort_ack": load.get("AbortAck"),
        },
    )
