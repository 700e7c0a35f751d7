"""Upstream's receivers send through real pyzmq PUSH sockets that upstream's own
`_connect` made (`reference/upstream/zmq_wire.py`); upstream's own heartbeat loop runs
on the scenario's clock (`reference/upstream/manager.py`).

Measured on the 0.5.19 wheel: the cached socket is a `zmq.Socket` with upstream's
options (LINGER 0, SNDTIMEO 1000 ms, IMMEDIATE 0) or, with `--sockets fail-fast`,
IMMEDIATE 1; a fail-fast send to a restarted rank raises libzmq's `zmq.Again` inside
upstream's `send_metadata`, whose own `except zmq.ZMQError` fails the request and
invalidates its cache entry; closing the world closes every socket it made. On 0.5.15
(RECONNECT_IVL -1, no SNDTIMEO) a send to a restarted rank never returns upstream:
`restart-recovery` is `bug`, naming upstream's caller and `_connect`. Upstream's ABORT
notification reaches each prefill rank as our `Abort`, and its `disconnect_endpoint` after a
node failure closes the socket it made to that rank's relay."""

from __future__ import annotations

import pytest
import zmq
from upstream_wheels import wheel

from reference.harness.lesson import Options, run_lesson
from reference.lessons import LESSONS
from reference.lessons.stale_bootstrap.check_world import check_world
from reference.status import KVPoll
from reference.upstream import load_sglang


def _variant(version: str = "0.5.19"):
    return load_sglang(str(wheel(version))).module


def _sockets(world) -> list[zmq.Socket]:
    relays = world.manager.relays
    cache = world.variant.KVReceiver._socket_cache
    return [cache[relay.endpoint] for relay in relays.by_scenario.values() if relay.endpoint in cache]


def test_upstreams_own_connect_makes_a_real_socket_with_its_options() -> None:
    variant = _variant()
    with check_world(variant, "upstream") as world:
        done = world.request()
        assert done.status == KVPoll.Success
        (sock,) = _sockets(world)
        assert isinstance(sock, zmq.Socket) and sock.type == zmq.PUSH
        assert (sock.getsockopt(zmq.LINGER), sock.getsockopt(zmq.SNDTIMEO)) == (0, 1000)
        assert sock.getsockopt(zmq.IMMEDIATE) == 0
    assert sock.closed


def test_fail_fast_send_raises_zmq_again_into_upstreams_except() -> None:
    variant = _variant()
    with check_world(variant, "fail-fast") as world:
        world.request()
        (sock,) = _sockets(world)
        assert sock.getsockopt(zmq.IMMEDIATE) == 1
        cached = world.ports()
        receiver = world.open()  # a cache hit on the live generation
        world.prefills[0].restart()  # its rank ports go away: the relay now refuses
        world.send(receiver)
        assert KVPoll(receiver.poll()) == KVPoll.Failed
        reason = world.manager.failure_records[receiver.bootstrap_room]
        assert reason.startswith("send_metadata to prefill"), reason  # upstream's own except
        assert not world.stale([p for ports in cached.values() for p in ports])  # invalidated


def test_upstream_sockets_queue_to_a_gone_rank_silently() -> None:
    variant = _variant()
    with check_world(variant, "upstream") as world:
        world.request()
        receiver = world.open()
        world.prefills[0].restart()
        world.send(receiver)  # IMMEDIATE=0: libzmq queues, no error
        assert KVPoll(receiver.poll()) != KVPoll.Failed
        assert world.manager.relays.undelivered == 1


def test_upstreams_own_heartbeat_loop_runs() -> None:
    variant = _variant()
    with check_world(variant, "upstream") as world:
        world.manager.start_heartbeat()
        thread = world.manager._heartbeat
        assert thread is not None and thread.is_alive()
        target = thread._target  # upstream's closure, from the wheel
        assert target.__code__.co_filename.startswith("<sglang-0.5.19>/sglang/srt/disaggregation/common/")
        world.clock.wait_for_sleepers(1)
        world.clock.advance(world.manager.heartbeat_interval * 3)
        assert world.manager.heartbeat_rounds >= 2
    thread.join(2)
    assert not thread.is_alive()


def test_upstreams_abort_notification_reaches_each_rank_as_our_abort() -> None:
    """Upstream's 4-frame ABORT (room, decode ip, port) from its waiting timeout is handed on
    by the relay as our `Abort` for the room: each of the two ranks is told once."""
    variant = _variant()
    with check_world(variant, "upstream", tp=2) as world:
        world.net.drop(count=2, tag=b"STATUS")
        receiver = world.open()
        world.send(receiver)
        world.clock.advance(world.manager.waiting_timeout)
        assert KVPoll(receiver.poll()) == KVPoll.Failed
        room = receiver.bootstrap_room
        told = {endpoint: world.net.aborts[(endpoint, room)] for endpoint in world.prefills[0].endpoints}
        assert list(told.values()) == [1, 1], told
        assert all(room in rank.aborted for rank in world.prefills[0].ranks)


def test_upstreams_disconnect_after_a_node_failure_closes_its_socket_to_the_relay() -> None:
    """Upstream's `_handle_node_failure` calls `disconnect_endpoint(rank endpoint)`; the
    adapter runs it on the relay endpoint its cache is keyed by: upstream closes its own
    socket, drops it from its cache, and the transport is told the rank endpoint."""
    variant = _variant()
    with check_world(variant, "upstream") as world:
        world.request()
        (sock,) = _sockets(world)
        prefill = world.prefills[0]
        world.manager.start_heartbeat()
        world.clock.wait_for_sleepers(1)
        prefill.kill()
        world.clock.advance(world.manager.heartbeat_interval * world.manager.max_failures)
        assert sock.closed and not _sockets(world)
        assert prefill.endpoints[0] in world.net.disconnected


def _optional_wheel(version: str):
    """A release CI does not fetch (not a boundary one): skip without it, even under CI."""
    from upstream_wheels import wheel_dir

    found = sorted(wheel_dir().glob(f"sglang-{version}-*.whl"))
    if not found:
        pytest.skip(f"no sglang-{version} wheel (bash ci/upstream.sh --all fetches every release)")
    return found[0]


def test_a_send_that_never_returns_upstream_is_a_bug_naming_why() -> None:
    """0.5.15's decode sockets reconnect never (RECONNECT_IVL -1) and time out never: once
    the restarted rank's connection dropped, libzmq has no pipe for the next send. Measured:
    the adapter's bound fired on a socket upstream set RECONNECT_IVL -1 on, with no pipe."""
    variant = load_sglang(str(_optional_wheel("0.5.15")))
    result = run_lesson(LESSONS["restart-recovery"], variant, Options(quick=True))
    assert result.verdict == result.expected == "bug", result.symptom
    assert "the send never returns" in result.symptom and "RECONNECT_IVL -1" in result.symptom
    assert "CommonKVReceiver._connect (common/conn.py:" in result.symptom
    assert "send_metadata (mooncake/conn.py:" in result.symptom
    assert (
        "the send never returns"
        not in run_lesson(
            LESSONS["restart-recovery"], load_sglang(str(wheel("0.5.19"))), Options(quick=True)
        ).symptom
    )


class _NeverBinds:
    """A stand-in for `socket.socket` whose bind always fails (the port stays taken)."""

    def __init__(self, *args: object) -> None:
        self.closed = False

    def setsockopt(self, *args: object) -> None:
        pass

    def bind(self, address: object) -> None:
        raise OSError(98, "Address already in use")

    def close(self) -> None:
        self.closed = True


def test_a_relay_that_cannot_reserve_its_closed_port_makes_the_run_unknown(monkeypatch) -> None:
    from reference.harness.result import Observation
    from reference.upstream import zmq_wire

    relay = zmq_wire.Relay(zmq_wire._context(), "tcp://10.0.0.1:41000", None, alive=True, immediate=False)
    monkeypatch.setattr(zmq_wire, "WAIT_MS", 20)
    monkeypatch.setattr(zmq_wire.socket, "socket", _NeverBinds)

    def run(options: object) -> Observation:
        relay.refuse()  # the rank died; its port could not be reserved
        return Observation("ok", "the send succeeded")

    try:
        observed = zmq_wire._hang_observed(run, None)
    finally:
        relay.close()
    assert observed.verdict == "unknown"
    assert "could not be reserved" in observed.symptom
    assert relay.refuser is None and not relay.alive


def test_a_closed_relays_port_refuses_connections() -> None:
    import socket

    from reference.upstream import zmq_wire

    relay = zmq_wire.Relay(zmq_wire._context(), "tcp://10.0.0.1:41000", None, alive=True, immediate=False)
    try:
        relay.refuse()
        assert relay.refuser is not None
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.settimeout(2)
        try:
            with pytest.raises(ConnectionRefusedError):
                probe.connect(("127.0.0.1", relay.port))
        finally:
            probe.close()
    finally:
        relay.close()
