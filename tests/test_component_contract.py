"""The receiver/manager contract every variant shares, on the mock network and virtual clock.

The lesson tests drive the lessons' own scenarios; these pin down the shared behaviour
around them that any correct variant must have, each run on the buggy and the fixed
form: the end of a request (`abort`, `failure_exception`, `clear`), the prefill's
layout check (`try_ensure_parallel_info`), which prefill ranks a decode rank reads
and what it tells them (`init`, the REGISTER and METADATA frames), the reason each
failure records, and the waiting timeout counted from `init_time`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

import reference.buggy
import reference.fixed
from reference import wire
from reference.clock import VirtualClock
from reference.common.bootstrap_table import BootstrapTable
from reference.common.receiver import KVTransferError
from reference.config import DispatcherConfig, ManagerConfig
from reference.dataplane import KVMemory, MemcpyWriter
from reference.messages import PrefillServerInfo
from reference.prefill.mock import MockPrefill, registration_body
from reference.prefill.rank import PrefillRank
from reference.status import KVPoll
from reference.transport.base import Reply
from reference.transport.mock import MockNetwork

VARIANTS = pytest.mark.parametrize("variant", [reference.buggy, reference.fixed], ids=["buggy", "fixed"])
ADDR, OTHER, PP_ADDR = "10.0.0.1:8998", "10.0.0.9:8998", "10.0.0.2:8998"
ROOM = 7


class _SpySocket:
    def __init__(self, spy: Spy, sock: Any) -> None:
        self.spy, self.sock, self.lock = spy, sock, sock.lock

    def send(self, frames: Any) -> None:
        self.spy.sent.append((self.sock.endpoint, wire.decode(list(frames))))
        self.sock.send(frames)


class Spy:
    """The mock network as the decode manager sees it, recording every message pushed."""

    def __init__(self, net: MockNetwork) -> None:
        self.net = net
        self.sent: list[tuple[str, wire.Message]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.net, name)

    def connect(self, endpoint: str) -> _SpySocket:
        return _SpySocket(self, self.net.connect(endpoint))

    def of(self, kind: type) -> list[tuple[str, Any]]:
        return [(endpoint, m) for endpoint, m in self.sent if isinstance(m, kind)]


@dataclass
class World:
    net: MockNetwork
    spy: Spy
    prefill: MockPrefill
    mgr: Any
    clock: VirtualClock

    def receiver(self, variant: Any, room: int = ROOM, addr: str = ADDR) -> Any:
        r = variant.KVReceiver(self.mgr, addr, room)
        r.init()  # the default prefill DP rank is 0
        return r

    def waiting(self, variant: Any, room: int = ROOM) -> Any:
        """A receiver whose metadata went out and whose transfer never reports back."""
        self.net.drop(count=99, tag=wire.STATUS)
        r = self.receiver(variant, room)
        r.send_metadata([0, 1])
        assert r.poll() == KVPoll.WaitingForInput
        return r


def world(variant: Any, prefill_tp: int = 1, prefill_cp: int = 1, start: float = 0.0,
          ensure: bool = True, regions: int = 0, **config: Any) -> World:  # fmt: skip
    clock = VirtualClock(start)
    net = MockNetwork(clock)
    prefill = MockPrefill(net, ADDR, tp_size=prefill_tp, cp_size=prefill_cp)
    spy = Spy(net)
    mgr = variant.KVManager(spy, ManagerConfig(**config), clock)
    mgr.listen(KVMemory(regions=regions or prefill_tp * prefill_cp))
    if ensure:
        assert mgr.try_ensure_parallel_info(ADDR)
    return World(net, spy, prefill, mgr, clock)


# -- 1. the end of a request: abort, failure_exception, clear -------------------------------
@VARIANTS
def test_abort_records_the_reason_and_latches_failed(variant):
    w = world(variant)
    r = w.waiting(variant)
    r.abort()
    assert w.mgr.check_status(ROOM) == KVPoll.Failed
    assert w.mgr.failure_records[ROOM] == "Aborted by AbortReq."
    r.clear()
    assert r.poll() == KVPoll.Failed, "poll() answers Failed even once the manager forgot the room"


@VARIANTS
def test_failure_exception_carries_the_reason_and_takes_the_record(variant):
    w = world(variant)
    r = w.waiting(variant)
    r.abort()
    exc = r.failure_exception()
    assert isinstance(exc, KVTransferError) and exc.bootstrap_room == ROOM
    assert str(exc) == f"room {ROOM}: Aborted by AbortReq."
    assert ROOM not in w.mgr.request_status and ROOM not in w.mgr.failure_records
    assert ROOM not in w.mgr.required_prefill_response_num_table
    assert r.poll() == KVPoll.Failed


@VARIANTS
def test_failure_exception_without_a_record_has_the_default_reason(variant):
    w = world(variant)
    r = variant.KVReceiver(w.mgr, ADDR, ROOM)
    exc = r.failure_exception()
    assert str(exc) == f"room {ROOM}: Failed due to an unknown reason" and exc.bootstrap_room == ROOM
    assert ROOM not in w.mgr.request_status
    assert r.poll() == KVPoll.Failed


@VARIANTS
def test_manager_abort_records_and_fails_a_tracked_room(variant):
    w = world(variant)
    r = variant.KVReceiver(w.mgr, ADDR, ROOM)
    w.mgr.abort(ROOM)
    assert w.mgr.check_status(ROOM) == KVPoll.Failed
    assert w.mgr.failure_records[ROOM] == "Aborted by AbortReq."
    assert r.poll() == KVPoll.Failed


@VARIANTS
def test_clear_drops_the_rooms_response_tables_and_can_repeat(variant):
    w = world(variant, prefill_tp=2)
    r = w.receiver(variant)
    r.send_metadata([0, 1])
    assert r.poll() == KVPoll.Success
    assert w.mgr.prefill_response_tracker[ROOM] == {0, 1}
    r.clear()
    assert ROOM not in w.mgr.required_prefill_response_num_table
    assert ROOM not in w.mgr.prefill_response_tracker
    r.clear()  # a second clear (e.g. after failure_exception) is harmless
    assert r.poll() == KVPoll.Success, "the end state stays latched after clear"


# -- 2. try_ensure_parallel_info -------------------------------------------------------------
@VARIANTS
def test_parallel_info_is_fetched_once_then_cached(variant):
    w = world(variant, prefill_tp=2)
    fetches = w.net.route_fetches
    assert w.mgr.try_ensure_parallel_info(ADDR) is True
    assert w.net.route_fetches == fetches
    assert w.mgr.prefill_info_table[ADDR].attn_tp_size == 2


INFO = dataclasses.asdict(PrefillServerInfo())


@VARIANTS
@pytest.mark.parametrize(
    "reply",
    [None, Reply(503, INFO), Reply(200, [INFO]), Reply(200, {"attn_tp_size": 1})],
    ids=["no-answer", "non-200", "not-a-dict", "missing-fields"],
)
def test_parallel_info_is_false_while_the_prefill_cannot_answer(variant, reply):
    w = world(variant)
    if reply is not None:
        w.net.serve(OTHER, lambda *_: reply)
        w.net.add_prefill(OTHER)
    assert w.mgr.try_ensure_parallel_info(OTHER) is False
    assert OTHER not in w.mgr.prefill_info_table


@VARIANTS
def test_parallel_info_layout_mismatch_names_both_sides(variant):
    w = world(variant, ensure=False, page_size=16, kv_cache_dtype="fp8_e4m3")
    with pytest.raises(RuntimeError) as raised:
        w.mgr.try_ensure_parallel_info(ADDR)
    message = str(raised.value)
    assert ADDR in message and "page_size=1" in message and "kv_cache_dtype=auto" in message
    assert "16" in message and "fp8_e4m3" in message
    assert ADDR not in w.mgr.prefill_info_table


# -- 3. which prefill ranks a decode rank reads, and what it tells them ------------------------
def _ranks(infos: list[dict]) -> list[tuple[int, int, int, bool]]:
    return [(i["cp_rank"], i["tp_rank"], i["pp_rank"], i["is_dummy"]) for i in infos]


@VARIANTS
def test_fan_in_two_prefill_ranks_into_one_decode_rank(variant):
    w = world(variant, prefill_tp=2)
    memory = w.mgr.inbox.memory
    memory.plane = '{"backend": "test"}'  # what a real data plane registers
    r = w.receiver(variant)
    assert _ranks(r.bootstrap_infos) == [(0, 0, 0, False), (0, 1, 0, False)]
    assert _ranks(w.mgr.connection_pool[f"{ADDR}_0_0_0"]) == _ranks(r.bootstrap_infos)
    assert w.mgr.required_prefill_response_num_table[ROOM] == 2
    regs = [m for _, m in w.spy.of(wire.Registration)]
    assert [m.kv_ptr for m in regs] == [memory.region_ptr(0), memory.region_ptr(1)]
    assert {m.plane for m in regs} == {memory.plane} and {m.item_len for m in regs} == {memory.item_len}
    w.net.drop(count=1, tag=wire.STATUS)  # rank 0's answer is lost
    r.send_metadata([0, 1])
    sent = w.spy.of(wire.Metadata)
    assert [e for e, _ in sent] == w.prefill.endpoints
    assert {m.required_dst_info_num for _, m in sent} == {1}
    assert r.poll() == KVPoll.WaitingForInput, "one of two prefill ranks answered"


@VARIANTS
def test_second_decode_rank_reads_its_own_range_of_prefill_ranks(variant):
    w = world(variant, prefill_tp=4, attn_tp_size=2, attn_tp_rank=1)
    r = w.receiver(variant)
    assert [i["tp_rank"] for i in r.bootstrap_infos] == [2, 3]
    r.send_metadata([0, 1])
    assert [e for e, _ in w.spy.of(wire.Metadata)] == w.prefill.endpoints[2:]
    assert r.poll() == KVPoll.Success


def _pipeline_prefill(net: MockNetwork, clock: VirtualClock, cp_size: int, pp_size: int) -> None:
    """A tp-1 prefill at PP_ADDR with `cp_size` x `pp_size` ranks (a MockPrefill has one PP stage)."""
    table = BootstrapTable(clock.now)
    for cp in range(cp_size):
        for pp in range(pp_size):
            send = lambda endpoint, frames: net.deliver(f"tcp://{endpoint}", frames)  # noqa: E731
            rank = PrefillRank(cp * pp_size + pp, MemcpyWriter(net.memory), send)
            port = int(net.bind(rank.handle, ip="10.0.0.2").rsplit(":", 1)[1])
            stage = {"pp_size": pp_size, "pp_rank": pp}
            body = registration_body("10.0.0.2", port, 0, 1, cp, cp_size) | stage
            assert table.handle("PUT", "/route", {}, json.dumps(body).encode()).status == 200
    net.serve(PP_ADDR, table.handle)
    net.add_prefill(PP_ADDR)


@VARIANTS
def test_every_pipeline_stage_of_every_cp_rank_answers_into_its_own_region(variant):
    w = world(variant, regions=4)
    _pipeline_prefill(w.net, w.clock, cp_size=2, pp_size=2)
    assert w.mgr.try_ensure_parallel_info(PP_ADDR)
    r = w.receiver(variant, addr=PP_ADDR)
    assert _ranks(r.bootstrap_infos) == [(cp, 0, pp, False) for cp in (0, 1) for pp in (1, 0)]
    assert w.mgr.required_prefill_response_num_table[ROOM] == 4
    memory = w.mgr.inbox.memory
    assert [m.kv_ptr for _, m in w.spy.of(wire.Registration)] == [memory.region_ptr(i) for i in range(4)]
    w.net.drop(count=1, tag=wire.STATUS)
    r.send_metadata([0])
    assert r.poll() == KVPoll.WaitingForInput, "three of four ranks answered"


@VARIANTS
@pytest.mark.parametrize("decode_rank", [0, 1])
def test_two_decode_ranks_share_one_prefill_rank(variant, decode_rank):
    w = world(variant, prefill_tp=1, attn_tp_size=2, attn_tp_rank=decode_rank)
    r = w.receiver(variant)
    assert r.poll() == KVPoll.WaitingForInput
    assert _ranks(r.bootstrap_infos) == [(0, 0, 0, False)]
    r.send_metadata([0, 1])
    [(endpoint, meta)] = w.spy.of(wire.Metadata)
    assert endpoint == w.prefill.endpoints[0]
    assert meta.required_dst_info_num == 2, "the prefill rank must wait for both decode ranks"
    assert r.poll() == KVPoll.Success


@VARIANTS
@pytest.mark.parametrize(
    "reply", [Reply(200, {}), Reply(503, {"rank_ip": "10.0.0.1", "rank_port": 41000})], ids=["no-port", "503"]
)
def test_a_bad_route_answer_fails_the_fetch(variant, reply):
    w = world(variant)
    table = w.prefill.table.handle
    w.net.serve(ADDR, lambda m, p, q, b: table(m, p, q, b) if q["target_tp_rank"] == "-1" else reply)
    r = w.receiver(variant)
    assert r.poll() == KVPoll.Failed and w.mgr.check_status(ROOM) == KVPoll.Failed
    assert w.mgr.failure_records[ROOM] == f"Failed to fetch bootstrap info from {ADDR}"
    assert w.spy.sent == []


# -- 4. the reason each failure records ------------------------------------------------------
@VARIANTS
def test_a_failed_registration_names_the_rank_and_the_error(variant):
    w = world(variant)
    for endpoint in w.prefill.endpoints:
        w.net.unbind(endpoint)
    r = w.receiver(variant)
    assert r.poll() == KVPoll.Failed and w.mgr.check_status(ROOM) == KVPoll.Failed
    reason = w.mgr.failure_records[ROOM]
    assert reason.startswith("Failed to register KV args with prefill 10.0.0.1:41000: ")
    assert "Resource temporarily unavailable" in reason


@VARIANTS
def test_a_failed_send_names_the_rank_and_the_error(variant):
    w = world(variant)
    r = w.receiver(variant)
    for endpoint in w.prefill.endpoints:
        w.net.unbind(endpoint)
    r.send_metadata([0, 1])
    assert r.poll() == KVPoll.Failed
    reason = w.mgr.failure_records[ROOM]
    assert reason.startswith("send_metadata to prefill 10.0.0.1:41000 failed: ")
    assert "Resource temporarily unavailable" in reason


@VARIANTS
def test_a_lost_prefill_fails_its_rooms_with_the_address(variant):
    w = world(variant)
    r = w.waiting(variant)
    w.mgr._handle_node_failure(ADDR)
    assert w.mgr.check_status(ROOM) == KVPoll.Failed and r.poll() == KVPoll.Failed
    assert w.mgr.failure_records[ROOM] == f"Lost connection with prefill instance (bootstrap_addr: {ADDR})"
    assert ADDR not in w.mgr.addr_to_rooms_tracker and ADDR not in w.mgr.prefill_info_table


@VARIANTS
def test_a_lost_prefill_without_rooms_just_forgets_it(variant):
    w = world(variant)
    w.mgr._handle_node_failure(ADDR)
    assert ADDR not in w.mgr.addr_to_rooms_tracker and ADDR not in w.mgr.prefill_info_table
    assert w.mgr.connection_pool == {} and w.mgr.request_status == {}


@VARIANTS
def test_send_metadata_after_a_failed_init_fails_with_its_reason(variant):
    w = world(variant)
    r = w.receiver(variant, addr=OTHER)  # never ensured: no parallel info
    assert r.poll() == KVPoll.Failed
    reason = f"Could not fetch prefill parallel info from bootstrap_addr: {OTHER}"
    assert w.mgr.failure_records[ROOM] == reason
    r.send_metadata([0, 1])
    assert w.mgr.failure_records[ROOM] == "send_metadata without bootstrap info (init failed)"
    assert r.poll() == KVPoll.Failed and w.spy.sent == []


# -- 5. the waiting timeout --------------------------------------------------------------------
@VARIANTS
def test_waiting_timeout_counts_from_init_time_and_aborts_once(variant):
    w = world(variant, prefill_tp=2, start=1000.0)
    r = w.waiting(variant)
    w.clock.advance(299.0)
    assert r.poll() == KVPoll.WaitingForInput
    w.clock.advance(1.0)
    assert r.poll() == KVPoll.Failed
    assert w.mgr.check_status(ROOM) == KVPoll.Failed
    assert w.mgr.failure_records[ROOM] == "Request timed out after 300.0 s in KVPoll.WaitingForInput"
    r.clear()  # the scheduler forgets the room at once
    for _ in range(3):
        assert r.poll() == KVPoll.Failed, "the timed-out room stays Failed for its receiver"
    aborts = w.spy.of(wire.Abort)
    assert [e for e, _ in aborts] == w.prefill.endpoints and {m.room for _, m in aborts} == {ROOM}


# -- the DP dispatcher ---------------------------------------------------------------------------
@VARIANTS
def test_dispatcher_takes_its_config_by_keyword(variant):
    config = DispatcherConfig(req_timeout=5.0)
    dispatcher = variant.DPDispatcher(SimpleNamespace(size=2), config=config)
    assert dispatcher.config is config and dispatcher.dp_size == 2
