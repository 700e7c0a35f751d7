"""The mock network's faults, the wire format, a prefill rank and the decode inbox."""

import pytest

import reference.fixed
from reference import wire
from reference.clock import VirtualClock
from reference.common.decode_inbox import DecodeInbox
from reference.config import ManagerConfig
from reference.dataplane import KVMemory, MemcpyWriter
from reference.prefill.mock import MockPrefill
from reference.prefill.rank import PrefillRank
from reference.status import KVPoll
from reference.transport.base import TransportError
from reference.transport.mock import FIRST_PORT, MockNetwork

ADDR = "10.0.0.1:8998"


def test_a_restart_binds_new_ports_behind_the_same_address():
    net = MockNetwork()
    prefill = MockPrefill(net, ADDR, tp_size=2)
    assert prefill.rank_ports == [FIRST_PORT, FIRST_PORT + 1]
    prefill.restart()
    assert prefill.rank_ports == [FIRST_PORT + 2, FIRST_PORT + 3] and prefill.generation == 2
    assert net.health(ADDR)
    route = net.get_route(ADDR, {"prefill_dp_rank": 0, "prefill_cp_rank": 0, "target_tp_rank": 1,
                                 "target_pp_rank": 0})  # fmt: skip
    assert route.body == {"rank_ip": "10.0.0.1", "rank_port": FIRST_PORT + 3}
    with pytest.raises(TransportError, match="send timed out"):
        net.connect(f"tcp://10.0.0.1:{FIRST_PORT}").send([b"x"])
    assert net.send_failures == 1


def test_a_killed_prefill_answers_nothing():
    net = MockNetwork()
    prefill = MockPrefill(net, ADDR, tp_size=1)
    prefill.kill()
    assert not net.health(ADDR)
    with pytest.raises(TransportError, match="connection refused"):
        net.get_route(ADDR, {})


def test_drop_and_delay_match_by_tag_and_count():
    clock = VirtualClock()
    net = MockNetwork(clock)
    got: list[list[bytes]] = []
    endpoint = net.bind(got.append)
    sock = net.connect(endpoint)
    net.drop(count=1, tag=b"A")
    net.delay(10.0, count=1, tag=b"B")
    for frames in ([b"A", b"1"], [b"A", b"2"], [b"B", b"3"], [b"C", b"4"]):
        sock.send(frames)
    assert got == [[b"A", b"2"], [b"C", b"4"]] and net.dropped == 1
    clock.advance(9.0)
    assert net.pump() == 0
    clock.advance(1.0)
    assert net.pump() == 1 and got[-1] == [b"B", b"3"]


def test_delay_needs_a_clock_and_a_late_message_to_a_dead_endpoint_is_lost():
    with pytest.raises(ValueError, match="needs a MockNetwork built with a clock"):
        MockNetwork().delay(1.0)
    clock = VirtualClock()
    net = MockNetwork(clock)
    got: list[list[bytes]] = []
    endpoint = net.bind(got.append)
    net.delay(1.0)
    net.connect(endpoint).send([b"late"])
    net.unbind(endpoint)
    clock.advance(2.0)
    assert net.pump() == 0 and got == []


def test_disconnect_forgets_the_cached_socket():
    net = MockNetwork()
    endpoint = net.bind(lambda frames: None)
    sock = net.connect(endpoint)
    assert net.connect(endpoint) is sock
    net.disconnect(endpoint)
    assert net.connect(endpoint) is not sock and net.disconnected == [endpoint]


@pytest.mark.parametrize(
    "frames",
    [[], [b"NOPE"], [wire.METADATA, b"1"], [wire.STATUS, b"x", b"4", b"0", b""], [wire.REGISTER, b"\xff"] * 3,
     [wire.STATUS, b"1", b"9", b"0", b""]],
)  # fmt: skip
def test_malformed_messages_raise_value_error_with_one_line(frames):
    with pytest.raises(ValueError, match="malformed message") as caught:
        wire.decode(frames)
    assert "\n" not in str(caught.value)


def test_messages_roundtrip():
    for message in (
        wire.Registration("127.0.0.1:5", "127.0.0.1:5", 128, 64),
        wire.Metadata(7, "s", "127.0.0.1:5", (3, 1, 2), 2),
        wire.Abort(7, "s"),
        wire.Status(7, KVPoll.Success, 1, b"d" * 32),
        wire.KVWrite(64, b"abc"),
    ):
        assert wire.decode(message.frames()) == message


def rank_and_inbox():
    net = MockNetwork()
    manager = reference.fixed.KVManager(net)
    memory = KVMemory(regions=1, pages=4, item_len=32)
    inbox = manager.listen(memory)
    rank = PrefillRank(0, MemcpyWriter(net.memory), lambda ep, frames: net.deliver(f"tcp://{ep}", frames))
    return net, manager, memory, inbox, rank


def test_a_rank_transfers_registered_decodes_and_fails_unregistered_ones():
    _, manager, memory, inbox, rank = rank_and_inbox()
    for room in (1, 2):
        manager.update_status(room, KVPoll.WaitingForInput)
    rank.handle(wire.Metadata(1, inbox.session, inbox.endpoint, (2,)).frames())
    assert manager.check_status(1) == KVPoll.Failed and rank.unregistered == 1
    assert "prefill rank 0 reported the transfer failed" in manager.failure_records[1]
    rank.handle(wire.Registration(inbox.session, inbox.endpoint, memory.region_ptr(0), 32).frames())
    rank.handle(wire.Metadata(2, inbox.session, inbox.endpoint, (2,)).frames())
    assert manager.check_status(2) == KVPoll.Success
    assert memory.read(memory.page_ptr(0, 2), 32) == wire.kv_page(2, 0, 0, 32)
    assert inbox.reported_digests[(2, 0)] == wire.kv_digest([wire.kv_page(2, 0, 0, 32)])


def test_a_rank_skips_aborted_rooms_and_survives_garbage():
    _, manager, _, inbox, rank = rank_and_inbox()
    manager.update_status(3, KVPoll.WaitingForInput)
    rank.handle([b"garbage"])
    rank.handle(wire.Abort(3, inbox.session).frames())
    rank.handle(wire.Metadata(3, inbox.session, inbox.endpoint, (0,)).frames())
    assert manager.check_status(3) == KVPoll.WaitingForInput and rank.malformed == 1


def test_inbox_waits_for_every_required_rank_and_drops_answers_for_cleared_rooms():
    manager = reference.fixed.KVManager(MockNetwork())
    inbox = DecodeInbox(manager, KVMemory(regions=1, pages=1, item_len=32))
    manager.update_status(5, KVPoll.WaitingForInput)
    manager.required_prefill_response_num_table[5] = 2
    inbox.handle(wire.Status(5, KVPoll.Success, 0).frames())
    inbox.handle(wire.Status(5, KVPoll.Success, 0).frames())  # the same rank twice is still one
    assert manager.check_status(5) == KVPoll.WaitingForInput
    inbox.handle(wire.Status(5, KVPoll.Success, 1).frames())
    assert manager.check_status(5) == KVPoll.Success
    inbox.handle(wire.Status(6, KVPoll.Success, 0).frames())
    inbox.handle(wire.KVWrite(10_000, b"x").frames())
    inbox.handle([b"junk"])
    assert 6 not in manager.request_status and inbox.dropped == 3


def test_parallel_info_mismatch_is_a_clear_error():
    net = MockNetwork()
    MockPrefill(net, ADDR, tp_size=1)
    manager = reference.fixed.KVManager(net, ManagerConfig(page_size=16))
    with pytest.raises(RuntimeError, match="page_size=1, kv_cache_dtype=auto; decode has 16, auto"):
        manager.try_ensure_parallel_info(ADDR)
    assert not manager.try_ensure_parallel_info("10.9.9.9:1"), "an unreachable prefill is a plain False"


def test_upstream_socket_options_queue_a_send_to_a_dead_endpoint_silently():
    net = MockNetwork(immediate=False)  # upstream's ZMQ_IMMEDIATE=0
    endpoint = net.bind(lambda frames: None)
    net.unbind(endpoint)
    net.connect(endpoint).send([b"x"])  # no error: queued for a peer that never comes back
    assert (net.queued_to_dead, net.send_failures) == (1, 0)
    with pytest.raises(TransportError):
        MockNetwork(immediate=True).connect(endpoint).send([b"x"])
