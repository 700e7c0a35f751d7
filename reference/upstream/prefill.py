"""Upstream's prefill-side manager and sender, for configuration `prefill_complete`.

Under `--disaggregation-decode-allocation-policy prefill_complete` (`configs.py`) the
decode reserves KV only once the prefill says its forward is done: the prefill keeps a
rendezvous table (`DeferredBootstrap`, 0.5.23) joining each room's sender to the decode
endpoint that bootstrapped it, and upstream's `CommonKVManager.update_status` tells that
endpoint when the room fails (`_notify_bootstrap`). That state lives only in a manager in
PREFILL mode, which the lessons' decode never builds; this module builds one.

Upstream code (run unchanged, from the wheel or tree):
- `CommonKVManager.__init__` in PREFILL mode with the configuration's settings (its
  `register_to_bootstrap` PUT included, its `DeferredBootstrap`), `update_status`,
  `_handle_bootstrap_message` (the bootstrap thread's first reader of what the decode
  sends), `_notify_bootstrap`, `send_kv_status_message` and `_send_multipart_locked`
  (real pyzmq PUSH sockets to the decode's endpoint), `parse_kv_status_message`;
- `CommonKVSender.__init__`, `abort`, `mark_prefill_complete`, `clear`.

Adapter code (this file), and why:
- the backend's own `__init__` does not run (mooncake's transfer engine, its buffer
  registration, its bootstrap and transfer threads): as for the decode (`manager.py`);
  what the bootstrap thread would read from the manager's PULL socket, the adapter hands
  to upstream's `_handle_bootstrap_message` itself (`deliver`), on the caller's thread;
- the bootstrap server that answers the prefill's `PUT /route`: the registration is
  recorded and answered 200 (`bound.py`'s `put`);
- the decode's control endpoint (`DecodeEndpoint`): a real PULL socket on 127.0.0.1 whose
  messages are read back with upstream's own `parse_kv_status_message`, each wait bounded;
- the sender is `CommonKVSender` (its mooncake subclass does not load here: its module
  defines it with trace stages the tracing stand-in lacks; the methods driven are all
  `CommonKVSender`'s own).
"""

from __future__ import annotations

from typing import Any

import zmq

from reference.status import KVPoll
from reference.upstream.bound import bound
from reference.upstream.configs import Configuration
from reference.upstream.loader import UpstreamLoad
from reference.upstream.standins import DISAGG, Settings

WAIT_MS = 5000  # the longest a read of the decode's endpoint waits for a message it expects


def settings(configuration: Configuration) -> Settings | None:
    """Upstream's `get_disagg()` in `configuration` (None: upstream's defaults)."""
    if configuration.allocation == DISAGG["disaggregation_decode_allocation_policy"]:
        return None
    return Settings(
        "get_disagg()", {**DISAGG, "disaggregation_decode_allocation_policy": configuration.allocation}
    )


class PrefillAdapter:
    """Mixin placed before upstream's prefill manager in the MRO (see the module doc)."""

    _common_init: Any
    _kv_args: Any
    _sender: type
    _upstream: Any
    _disagg: Settings | None

    def __init__(self) -> None:
        self.registrations: list[Any] = []  # what its PUT /route told the bootstrap server
        args = self._kv_args()
        args.state_types = []  # a full-attention KV pool (what prefill_complete supports)
        mode = self._upstream.DisaggregationMode.PREFILL
        with self._bound():
            self._common_init(self, args, mode, self._upstream.ServerArgs(), False)

    def _bound(self) -> Any:
        return bound(disagg=self._disagg, put=self._registered)

    def _registered(self, _url: str, payload: Any) -> int:
        self.registrations.append(payload)
        return 200

    def open(self, bootstrap_room: int, bootstrap_addr: str = "127.0.0.1:8998") -> Any:
        """Upstream's sender for a request of `bootstrap_room` (the prefill scheduler's)."""
        with self._bound():
            return self._sender(self, bootstrap_addr, bootstrap_room)

    def deliver(self, frames: list[bytes]) -> None:
        """A message from a decode on the manager's socket: upstream's bootstrap reader."""
        with self._bound():
            if not self._handle_bootstrap_message(frames):  # type: ignore[attr-defined]
                raise ValueError(f"not a bootstrap message the adapter hands on: {frames[:1]!r}")

    def call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        """`method(*args, **kwargs)` (a sender's or this manager's) under its settings."""
        with self._bound():
            return method(*args, **kwargs)

    def update_status(self, bootstrap_room: int, status: Any) -> None:
        """Upstream's `update_status`, given upstream's own `KVPoll` value (never our IntEnum)."""
        with self._bound():
            super().update_status(bootstrap_room, getattr(self._upstream.KVPoll, KVPoll(status).name))  # type: ignore[misc]

    def close(self) -> None:
        context = getattr(self, "_zmq_ctx", None)
        if context is not None:
            context.destroy(linger=0)


class DecodeEndpoint:
    """A decode's control endpoint: a real PULL socket on 127.0.0.1 (see the module doc)."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.PULL)
        self.port = self.socket.bind_to_random_port("tcp://127.0.0.1")
        self.ip = "127.0.0.1"

    def bootstrap(self, bootstrap_room: int) -> list[bytes]:
        """The decode receiver's BOOTSTRAP message for the room (upstream's `init` sends it)."""
        return [b"BOOTSTRAP", str(bootstrap_room).encode("ascii"), self.ip.encode(), str(self.port).encode()]

    def statuses(self, bootstrap_room: int, expect: int) -> list[str]:
        """The statuses told for the room, in order, read with upstream's parser: waits for
        `expect` messages, then for any more, each wait bounded by `WAIT_MS`."""
        told: list[str] = []
        while self.socket.poll(WAIT_MS if len(told) < expect else 50):
            parsed = self.manager.parse_kv_status_message(self.socket.recv_multipart())
            if parsed is not None and parsed[0] == bootstrap_room:
                told.append(KVPoll(parsed[1]).name)  # upstream's KVPoll ints, by name
        return told

    def close(self) -> None:
        self.socket.close(linger=0)
        self.context.term()


def prefill_manager_class(load: UpstreamLoad, configuration: Configuration) -> type:
    """Upstream's prefill manager (mooncake's class, `CommonKVManager`'s methods) in
    `configuration`, driven as the module doc says."""
    from reference.upstream.manager import _concrete, _kv_args

    common = load.get("CommonKVManager")
    base = load.get("MooncakeKVManager") if load.has("MooncakeKVManager") else common
    kv_args_cls = load.get("KVArgs")
    return type(
        "PrefillKVManager",
        (PrefillAdapter, base),
        {
            "__module__": f"reference.upstream[{load.source.label}]",
            "__doc__": f"Upstream {load.source.label} {base.__name__} in PREFILL mode, driven by "
            "reference.upstream.prefill.",
            "_upstream": load.module(load.where("CommonKVManager")[0]),
            "_common_init": staticmethod(common.__init__),
            "_kv_args": staticmethod(lambda: _kv_args(kv_args_cls)),
            "_sender": _concrete(load.get("CommonKVSender")),
            "_disagg": settings(configuration),
        },
    )
