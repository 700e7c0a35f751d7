"""`KVReceiver` for lesson `stale-bootstrap`, built on upstream's own `CommonKVReceiver`.

The class is made per loaded version: `KVReceiver(ReceiverAdapter, CommonKVReceiver)`.

Upstream code (run unchanged, from the wheel or tree), everything PR #36029 changed in
`common/conn.py`:
- `__init__` (0.5.19 adds `_connection_pool_entries`), `init`, `_setup_bootstrap_infos`
  (the cache lookup, fetch, registration order and insertion), `invalidate_cached_
  bootstrap_infos` (0.5.19), `_check_waiting_timeout` (0.5.19 invalidates there) and
  `clear`, `_send_abort_notification`;
- `_get_bootstrap_info_from_server`: its `GET /route`, through upstream's per-address
  session, which `bound.py` routes through the scenario's transport (in-process on
  mock, real HTTP to 127.0.0.1 on loopback);
- on the manager: `try_ensure_parallel_info` and `_resolve_rank_mapping` (the prefill's
  layout, the target ranks and how many prefill ranks must answer).

Adapter code (this file), the parts upstream keeps in a backend (mooncake), not in
`common/conn.py`:
- `_register_kv_args` and `send_metadata` send our own frames (`reference/wire.py`) to
  each prefill rank, as mooncake's do; on a send error they record the failure and
  fail the request WITHOUT invalidating anything (0.5.19's mooncake also invalidates
  there; that line is in mooncake/conn.py, which the adapter does not load);
- `_connect_to_bootstrap_server` returns the transport's PUSH socket and lock. It
  behaves as upstream's ZMQ PUSH with `ZMQ_IMMEDIATE=0` (upstream's setting): a
  message to a peer that is gone is queued, never delivered, and the send returns
  without error (`QueueingSocket`). So a request sent to a restarted prefill's old
  ports ends in upstream's waiting timeout, and only upstream's own
  `_check_waiting_timeout` decides whether the cached entry is dropped;
- `poll`, as mooncake's: latch Success/Failed, run `_check_waiting_timeout` while
  WaitingForInput;
- each info dict upstream fetched gets our labels `tp_rank`, `cp_rank`, `region` (which
  part of the decode's KV memory that rank writes) after upstream's fetch returned it;
- upstream's `time.time()` reads the manager's injected clock during these calls
  (`bound.py`), and `init_time` is set from the same clock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from reference import wire
from reference.status import KVPoll
from reference.transport.base import PushSocket, TransportError
from reference.upstream.bound import bound


class QueueingSocket:
    """A PUSH socket as ZMQ with IMMEDIATE=0: a send to a peer that is gone is queued
    (and never delivered) instead of failing."""

    def __init__(self, sock: PushSocket) -> None:
        self.sock = sock
        self.queued_undelivered = 0

    def send_multipart(self, frames: list[bytes]) -> None:
        try:
            self.sock.send(frames)
        except TransportError:
            self.queued_undelivered += 1


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
        with bound(now=self.kv_mgr.clock.now, transport=self.kv_mgr.transport):
            yield

    def init(self, prefill_dp_rank: int = 0) -> None:
        with self._bound():
            super().init(prefill_dp_rank)  # type: ignore[misc]

    def poll(self) -> KVPoll:
        if self.conclude_state is not None:
            return KVPoll(self.conclude_state)
        status = self.kv_mgr.check_status(self.bootstrap_room)
        if status in (KVPoll.Success, KVPoll.Failed):
            self.conclude_state = status
        elif status == KVPoll.WaitingForInput:
            with self._bound():
                timed_out = self._check_waiting_timeout()  # type: ignore[attr-defined]
            if timed_out is not None:
                return KVPoll(timed_out)
        return KVPoll(status)

    def _get_bootstrap_info_from_server(self, dp: int, cp: int, tp: int, pp: int) -> dict | None:
        info: dict | None = super()._get_bootstrap_info_from_server(dp, cp, tp, pp)  # type: ignore[misc]
        if info is not None:
            per_cp = len(self.target_tp_ranks) * len(self.target_pp_ranks)
            in_cp = self.target_tp_ranks.index(tp) * len(self.target_pp_ranks) + self.target_pp_ranks.index(
                pp
            )
            info.update(tp_rank=tp, cp_rank=cp, region=self.target_cp_ranks.index(cp) * per_cp + in_cp)
        return info

    def _connect_to_bootstrap_server(self, info: dict) -> tuple[QueueingSocket, Any]:
        sock = self.kv_mgr.transport.connect(f"tcp://{info['rank_ip']}:{info['rank_port']}")
        return QueueingSocket(sock), sock.lock

    def _send_each(self, frames_for: Any, what: str) -> bool:
        for info in self.bootstrap_infos or []:
            try:
                sock, lock = self._connect_to_bootstrap_server(info)
                with lock:
                    sock.send_multipart(frames_for(info))
            except TransportError as exc:
                self.kv_mgr.record_failure(
                    self.bootstrap_room,
                    f"{what} to prefill {info['rank_ip']}:{info['rank_port']} failed: {exc}",
                )
                self.conclude_state = KVPoll.Failed
                self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
                return False
        return True

    def _register_kv_args(self) -> bool:
        inbox = self.kv_mgr.inbox
        memory = inbox.memory

        def registration(info: dict) -> list[bytes]:
            ptr = memory.region_ptr(info["region"])
            return wire.Registration(
                inbox.session, inbox.endpoint, ptr, memory.item_len, memory.plane
            ).frames()

        return self._send_each(registration, "_register_kv_args")

    def send_metadata(self, kv_indices: list[int], *_args: Any, **_kwargs: Any) -> None:
        if self.bootstrap_infos is None:
            self.kv_mgr.record_failure(
                self.bootstrap_room, f"Could not fetch prefill parallel info from {self.bootstrap_addr}"
            )
            self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
            return
        inbox = self.kv_mgr.inbox
        metadata = wire.Metadata(
            self.bootstrap_room, inbox.session, inbox.endpoint, tuple(kv_indices), self.required_dst_info_num
        ).frames()
        if self._send_each(lambda _info: metadata, "send_metadata"):
            self.init_time = self.kv_mgr.clock.now()  # upstream: time.time(), which is this clock here

    def failure_exception(self) -> Exception:
        return RuntimeError(self.kv_mgr.failure_records.get(self.bootstrap_room, "failed"))


def receiver_class(common: ModuleType, label: str) -> type:
    """The scenarios' `KVReceiver` for one loaded version of `common/conn.py`."""
    cls = type(
        "KVReceiver",
        (ReceiverAdapter, common.CommonKVReceiver),
        {
            "__module__": f"reference.upstream[{label}]",
            "__doc__": f"Upstream {label} CommonKVReceiver, driven by reference.upstream.receiver.",
        },
    )
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        raise TypeError(f"CommonKVReceiver leaves {', '.join(missing)} abstract")
    return cls
