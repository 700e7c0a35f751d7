"""Lesson `stale-bootstrap` on real sockets: the prefill is its own OS process, killed
and started again behind the same bootstrap port. Plus the loopback transport's own
contract. Every test reaps its processes (the autouse fixture checks threads, child
processes and sockets), including when the test body fails."""

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import zmq

from reference.common.bootstrap_table import ROUTE_QUERY
from reference.lessons import LESSONS, Options, run_lesson
from reference.prefill.loopback import LoopbackPrefill
from reference.transport.base import TransportError
from reference.transport.loopback import LoopbackTransport
from reference.variants import shipped

pytestmark = [pytest.mark.loopback, pytest.mark.lesson(id="stale-bootstrap")]
ROOT = Path(__file__).resolve().parents[1]


def test_lesson_end_to_end_with_a_real_prefill_restart():
    loopback = Options(transport="loopback")
    buggy = run_lesson(LESSONS["stale-bootstrap"], shipped("buggy"), loopback)
    fixed = run_lesson(LESSONS["stale-bootstrap"], shipped("fixed"), loopback)
    assert buggy.verdict == "bug", buggy.symptom
    assert buggy.symptom.startswith("0 of 5 requests succeeded after the prefill restart")
    assert buggy.details["stale_ports"] == sorted(buggy.details["old_ports"])
    assert buggy.details["first_failure"].endswith("in KVPoll.WaitingForInput"), "upstream sockets: queued"
    assert "shortened from upstream's 300 s" in buggy.symptom
    assert fixed.verdict == "ok", fixed.symptom
    assert "was queued silently and failed on the waiting timeout" in fixed.symptom
    assert fixed.details["failures_after"] == 1 and fixed.details["bytes_verified"] == 7
    for result in (buggy, fixed):
        first, second = result.details["prefill_pids"]
        assert first != second, "the restart is a new process"
        assert not psutil.pid_exists(first) and not psutil.pid_exists(second)
        assert result.details["heartbeat_misses"] == 0, "real /health answered every probe"


def test_fail_fast_sockets_fail_the_stale_send_itself():
    fixed = run_lesson(
        LESSONS["stale-bootstrap"], shipped("fixed"), Options(transport="loopback", sockets="fail-fast")
    )
    assert fixed.verdict == "ok", fixed.symptom
    assert "timed out after 0.5 s" in fixed.details["first_failure"]
    assert (
        "failed its send (fail-fast sockets)" in fixed.symptom and fixed.to_json()["sockets"] == "fail-fast"
    )


@pytest.mark.timeout(180)  # every loopback lesson on three variants, in a child process
def test_cli_runs_every_loopback_lesson():
    proc = subprocess.run(
        [sys.executable, "-m", "reference", "--transport", "loopback", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=170,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = {(r["lesson"], r["variant"]): r["verdict"] for r in json.loads(proc.stdout)["results"]}
    assert got == {
        ("live-set-race", "buggy"): "bug",  # the heartbeat probing real /health of real processes
        ("live-set-race", "fixed"): "ok",
        ("live-set-race", "hardened"): "ok",
        ("stale-bootstrap", "buggy"): "bug",
        ("stale-bootstrap", "fixed"): "ok",
        ("stale-bootstrap", "hardened"): "ok",
        ("task-refs", "buggy"): "bug",  # dispatcher workers as real processes
        ("task-refs", "fixed"): "ok",
        ("task-refs", "hardened"): "ok",
        ("restart-recovery", "buggy"): "bug",  # a real prefill restart on upstream's socket options
        ("restart-recovery", "fixed"): "bug",
        ("restart-recovery", "hardened"): "ok",
    }
    assert "skipped failed-resurrect: no loopback scenario" in proc.stderr
    assert all(r["transport"] == "loopback" for r in json.loads(proc.stdout)["results"])


def test_restart_keeps_the_bootstrap_port_and_changes_pid_and_rank_ports():
    transport = LoopbackTransport()
    try:
        with LoopbackPrefill(tp_size=2) as prefill:
            addr, ports = prefill.bootstrap_addr, list(prefill.rank_ports)
            assert transport.health(addr)
            prefill.restart()
            assert prefill.bootstrap_addr == addr and prefill.pids[0] != prefill.pids[1]
            assert transport.health(addr)
            assert prefill.rank_ports != ports
            reply = transport.get_route(addr, dict.fromkeys(ROUTE_QUERY, 0))
            assert reply.body == {"rank_ip": "127.0.0.1", "rank_port": prefill.rank_ports[0]}
            prefill.kill()
            assert not transport.health(addr)
    finally:
        transport.close()


def test_the_child_is_reaped_when_the_block_fails():
    with pytest.raises(RuntimeError, match="boom"), LoopbackPrefill(tp_size=1) as prefill:
        pid = prefill.pids[-1]
        raise RuntimeError("boom")
    assert prefill.process is None and not psutil.pid_exists(pid)


def test_a_prefill_that_cannot_start_is_reported_and_reaped():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(RuntimeError, match="exited with code 1 before it was ready"):
            LoopbackPrefill(tp_size=1, bootstrap_port=busy.getsockname()[1])


def test_send_to_a_dead_port_is_queued_silently_on_upstream_socket_options():
    transport = LoopbackTransport()  # IMMEDIATE=0, as upstream
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]  # free once closed: nobody listens there
        sock = transport.connect(f"tcp://127.0.0.1:{port}")
        started = time.monotonic()
        with sock.lock:
            sock.send([b"x"])  # "succeeds": the message waits for a peer that never comes
        assert time.monotonic() - started < 0.5
    finally:
        transport.close()


def test_send_to_a_dead_port_times_out_with_transport_error_on_fail_fast_sockets():
    transport = LoopbackTransport(send_timeout=0.05, immediate=True)
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]  # free once closed: nobody listens there
        sock = transport.connect(f"tcp://127.0.0.1:{port}")
        assert transport.connect(f"tcp://127.0.0.1:{port}") is sock, "the PUSH socket is cached"
        started = time.monotonic()
        with pytest.raises(TransportError, match=r"timed out after 0\.05 s"), sock.lock:
            sock.send([b"x"])
        assert time.monotonic() - started < 10.0
        transport.disconnect(f"tcp://127.0.0.1:{port}")
        assert transport.connect(f"tcp://127.0.0.1:{port}") is not sock
    finally:
        transport.close()
    assert transport.ctx.closed


def test_inbox_receives_and_close_stops_its_thread():
    transport = LoopbackTransport()
    got: list[list[bytes]] = []
    try:
        endpoint = transport.bind_inbox(got.append)
        sock = transport.connect(f"tcp://{endpoint}")
        sock.send([b"hello", b"world"])
        end = time.monotonic() + 10
        while not got and time.monotonic() < end:
            time.sleep(0.005)
        assert got == [[b"hello", b"world"]]
    finally:
        transport.close()
    assert not any(t.is_alive() for t in transport._listeners)


@pytest.mark.parametrize("addr", ["10.0.0.1:8998", "example.com:80"])
def test_only_loopback_addresses_are_reachable(addr):
    transport = LoopbackTransport()
    try:
        assert transport.health(addr) is False
        with pytest.raises(TransportError, match=r"only talks to 127\.0\.0\.1"):
            transport.get_route(addr, {})
        with pytest.raises(TransportError, match=r"only talks to 127\.0\.0\.1"):
            transport.connect(f"tcp://{addr}")
    finally:
        transport.close()


def test_zmq_context_is_per_transport():
    first, second = LoopbackTransport(), LoopbackTransport()
    try:
        assert first.ctx is not second.ctx and first.ctx is not zmq.Context.instance()
    finally:
        first.close()
        second.close()
