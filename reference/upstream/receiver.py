"""`KVReceiver` for lesson `stale-bootstrap`: upstream's own mooncake decode receiver.

The class is made per loaded version: `KVReceiver(ReceiverAdapter, MooncakeKVReceiver)`
(`CommonKVReceiver` where a version has no mooncake backend).

Upstream code (run unchanged, from the wheel or tree), everything PR #36029 changed:
- `CommonKVReceiver.__init__`, `init`, `_setup_bootstrap_infos`,
  `invalidate_cached_bootstrap_infos` (0.5.19), `_check_waiting_timeout`, `clear`,
  `_send_abort_notification`, `_get_bootstrap_info_from_server` (its `GET /route`
  goes through the scenario's transport, `bound.py`); on the manager
  `try_ensure_parallel_info` and `_resolve_rank_mapping`;
- mooncake's `MooncakeKVReceiver.__init__`, `_register_kv_args`, `send_metadata`
  (0.5.19 invalidates on a `ZMQError` there) and `poll` (where a version keeps them
  in `CommonKVReceiver`, those): upstream's own frames, upstream's own failure paths.

Adapter code (this file), at the socket and data-plane boundary:
- `_connect_to_bootstrap_server(info)` (upstream: its own `_connect` to the rank's
  endpoint) calls upstream's own `_connect`, unchanged, with the 127.0.0.1 endpoint of
  that rank's relay (`zmq_wire.py`): the PUSH socket, its options and every error its
  send raises are real and upstream's, so upstream's own `except zmq.ZMQError` decides
  what a failed send does. After a send the socket accepted, the relay hands the
  message on: `MooncakeWire` reads upstream's mooncake frames (register: session,
  decode endpoint, KV base pointer, item length; metadata: room, endpoint, session,
  int32 page indices, required answers) and the scenario's prefill gets the same facts
  in the reference prefill's frames (`reference/wire.py`); upstream's ABORT notification
  (room, decode ip and port, from 0.5.23 a generation) becomes our `Abort` for that room,
  naming the decode by its session; in configuration `staging` the staging ring a
  register frame names (frames 14 and 15) is recorded per rank
  (`manager._Staging.rings`), what upstream's prefill reads. A rank that is gone refuses
  connections for real: with upstream's IMMEDIATE=0 the send queues silently and the
  request ends in upstream's own waiting timeout; with `--sockets fail-fast` libzmq's
  send raises `zmq.Again`;
- each info dict upstream fetched gets our labels `tp_rank`, `cp_rank`, `region`
  (which part of the decode's KV memory that prefill rank writes), after upstream's
  fetch returned it; `MooncakeWire` adds that region's offset to the KV pointer;
- `send_metadata(kv_indices)` passes the scenario's page list as upstream's int32
  array (`array("i")`, which has the `tobytes` upstream calls); every call into
  upstream is bound to the manager's clock and transport; in configuration `staging`
  the decode scheduler's `register_decode_req` runs first (`manager._Staging`).
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from reference import wire
from reference.status import KVPoll
from reference.upstream.bound import bound
from reference.upstream.loader import UpstreamLoad
from reference.upstream.zmq_wire import RealPush


class MooncakeWire:
    """Reads upstream's mooncake frames and writes the reference prefill's frames for the
    same message (see the module doc); the socket is upstream's own (`zmq_wire.py`)."""

    def __init__(self, info: dict, memory: Any, session: str, staging: Any = None) -> None:
        self.info, self.memory, self.session, self.staging = info, memory, session, staging

    def translated(self, frames: list[bytes]) -> list[bytes]:
        text = [frame.decode("ascii", "replace") for frame in frames[:4]]
        endpoint = f"{text[1]}:{text[2]}" if len(frames) > 3 else ""
        if frames[0] == b"None" and len(frames) > 15 and self.staging is not None:
            self.staging.registered(self.info, frames[14], frames[15])  # the ring it was told of
        if frames[0] == b"None" and len(frames) > 9:  # register: upstream frames 1-4 and 9
            (base,) = struct.unpack_from("Q", frames[4]) if len(frames[4]) >= 8 else (0,)
            offset = self.memory.region_ptr(self.info["region"]) - self.memory.region_ptr(0)
            plane = self.memory.plane
            return wire.Registration(text[3], endpoint, base + offset, int(frames[9]), plane).frames()
        if frames[0].isdigit() and len(frames) > 7:  # metadata: frames 0-4 and 7
            indices = tuple(array("i", frames[4])) if frames[4] else ()
            return wire.Metadata(int(frames[0]), text[3], endpoint, indices, int(frames[7])).frames()
        if frames[0] == wire.ABORT and len(frames) > 1 and frames[1].isdigit():
            # upstream's abort notification: room, then (0.5.19 on) the decode's ip and port
            # and (0.5.23) a generation; ours names the decode by its session (one per manager)
            return wire.Abort(int(frames[1]), self.session).frames()
        return frames  # anything else reaches the reference prefill as upstream sent it


class ReceiverAdapter:
    """Mixin placed before upstream's `CommonKVReceiver` in the MRO (see the module doc)."""

    # Upstream's attributes the adapter reads or sets.
    kv_mgr: Any
    bootstrap_room: int
    bootstrap_addr: str
    conclude_state: Any
    init_time: float | None
    target_cp_ranks: list[int]
    target_tp_ranks: list[int]
    target_pp_ranks: list[int]
    required_dst_info_num: int
    bootstrap_infos: list[dict] | None = None  # set by upstream's _setup_bootstrap_infos

    @contextmanager
    def _bound(self) -> Iterator[None]:
        disagg = getattr(self.kv_mgr, "_disagg", None)  # a configuration's allocation policy
        with bound(now=self.kv_mgr.clock.now, transport=self.kv_mgr.transport, disagg=disagg):
            yield

    def init(self, prefill_dp_rank: int = 0) -> None:
        with self._bound():
            super().init(prefill_dp_rank)  # type: ignore[misc]

    def poll(self) -> KVPoll:
        with self._bound():
            return KVPoll(super().poll())  # type: ignore[misc]

    def _get_bootstrap_info_from_server(self, dp: int, cp: int, tp: int, pp: int) -> dict | None:
        info: dict | None = super()._get_bootstrap_info_from_server(dp, cp, tp, pp)  # type: ignore[misc]
        if info is not None:
            per_cp = len(self.target_tp_ranks) * len(self.target_pp_ranks)
            in_cp = self.target_tp_ranks.index(tp) * len(self.target_pp_ranks) + self.target_pp_ranks.index(
                pp
            )
            info.update(tp_rank=tp, cp_rank=cp, region=self.target_cp_ranks.index(cp) * per_cp + in_cp)
        return info

    def _connect_to_bootstrap_server(self, info: dict) -> tuple[RealPush, Any]:
        relays = self.kv_mgr.relays
        relay = relays.relay(f"tcp://{info['rank_ip']}:{info['rank_port']}")
        sock, lock = relays.connect(type(self), relay)  # upstream's own _connect, to the relay
        inbox = self.kv_mgr.inbox
        memory, session = (inbox.memory, inbox.session) if inbox is not None else (None, "")
        frames = MooncakeWire(info, memory, session, getattr(self.kv_mgr, "_staging_adapter", None))
        return RealPush(sock, relay, frames.translated, relays.bounded_by_adapter(relay)), lock

    def send_metadata(self, kv_indices: Any, *args: Any, **kwargs: Any) -> None:
        staging = getattr(self.kv_mgr, "_staging_adapter", None)
        with self._bound():
            if staging is not None:  # configuration `staging`: the scheduler registers it first
                staging.before_metadata(self)
            super().send_metadata(array("i", kv_indices), *args, **kwargs)  # type: ignore[misc]


def receiver_class(load: UpstreamLoad) -> type:
    """The scenarios' `KVReceiver` for one loaded version."""
    name = "MooncakeKVReceiver" if load.has("MooncakeKVReceiver") else "CommonKVReceiver"
    upstream = load.get(name)
    cls = type(
        "KVReceiver",
        (ReceiverAdapter, upstream),
        {
            "__module__": f"reference.upstream[{load.source.label}]",
            "__doc__": f"Upstream {load.source.label} {name}, driven by reference.upstream.receiver.",
        },
    )
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        raise TypeError(f"{name} leaves {', '.join(missing)} abstract")
    return cls
