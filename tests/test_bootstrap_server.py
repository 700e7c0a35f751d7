"""The bootstrap server on its own thread and loop, its cleanup task, and
`python -m reference.bootstrap` started as a real process."""

import json
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

import reference.buggy
import reference.fixed

ROOT = Path(__file__).resolve().parents[1]
BOUND = 10.0  # real seconds any start, stop or poll here may take


def wait_until(predicate, bound: float = BOUND) -> bool:
    end = time.monotonic() + bound
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


@pytest.mark.parametrize("variant", [reference.buggy, reference.fixed])
def test_start_serves_and_close_joins_and_frees_the_port(variant):
    server = variant.BootstrapServer("127.0.0.1", 0).start()
    port = server.port
    try:
        with requests.Session() as http:
            assert http.get(f"http://127.0.0.1:{port}/health", timeout=5).text == "OK"
            assert http.put(f"http://127.0.0.1:{port}/route", data=b"{", timeout=5).status_code == 400
            assert http.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200
    finally:
        server.close()
    assert not server._thread.is_alive()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))  # the port is free again


def test_a_busy_port_fails_in_start_with_a_clear_error():
    with reference.fixed.BootstrapServer("127.0.0.1", 0) as first:
        second = reference.fixed.BootstrapServer("127.0.0.1", first.port)
        with pytest.raises(OSError, match="in use"):
            second.start()
        second.close()


@pytest.mark.parametrize("variant", [reference.buggy, reference.fixed])
def test_cleanup_task_expires_old_room_entries_in_both_forms(variant):
    """Both forms run the cleanup task; only how it is referenced differs (lesson task-refs)."""
    with variant.BootstrapServer(cleanup_interval=0.02, entry_ttl=0.0) as server:
        server.table.handle("POST", "/register_dp_rank", {}, b'{"bootstrap_room": 1, "dp_rank": 0}')
        assert wait_until(lambda: server.cleanup_rounds > 0 and not server.table.room_to_dp_rank)
        held = getattr(server, "_background_tasks", None)
        assert held is None or len(held) == 1  # fixed holds exactly its one running task


def test_close_cancels_the_cleanup_task_without_warnings(recwarn):
    with reference.fixed.BootstrapServer(cleanup_interval=3600) as server:
        tasks = set(server._background_tasks)
    assert all(task.cancelled() for task in tasks) and not server._background_tasks
    assert not [w for w in recwarn if "destroyed" in str(w.message)]


def _start_cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "reference.bootstrap", *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _first_line(proc: subprocess.Popen) -> str:
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        assert selector.select(BOUND), "the server printed nothing"
    return proc.stdout.readline()


def test_cli_serves_health_survives_a_malformed_put_and_stops_on_sigint():
    proc = _start_cli("--host", "127.0.0.1", "--port", "0")
    try:
        line = _first_line(proc)
        assert "serving on http://127.0.0.1:" in line
        base = line.split()[-1]
        with requests.Session() as http:
            assert http.get(f"{base}/health", timeout=5).text == "OK"
            bad = http.put(f"{base}/route", data=b'{"attn_tp_size": ', timeout=5)
            assert bad.status_code == 400 and "malformed JSON" in bad.text
            assert http.get(f"{base}/health", timeout=5).status_code == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(BOUND) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=BOUND)


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["--port", "99999"], 2, "expected a port 0..65535, got '99999'"),
        (["--variant", "nope"], 2, "invalid choice: 'nope'"),
        (["--cleanup-interval", "0"], 2, "expected seconds > 0"),
        (["--host", ""], 2, "argument --host: expected an IP address such as 127.0.0.1 or ::1, got ''"),
        (["--host", "localhost"], 2, "expected an IP address such as 127.0.0.1 or ::1, got 'localhost'"),
        (["--host", "127.0.0.1\n"], 2, "expected an IP address"),
        (["--max-rooms", "0"], 2, "expected a whole number >= 1, got '0'"),
    ],
)
def test_cli_bad_flags_get_one_line(args, code, needle):
    proc = _start_cli(*args)
    _, err = proc.communicate(timeout=BOUND)
    assert proc.returncode == code and needle in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_on_a_busy_port_gets_one_line_and_exit_1():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        proc = _start_cli("--port", str(busy.getsockname()[1]))
        _, err = proc.communicate(timeout=BOUND)
    assert proc.returncode == 1 and "cannot serve on 127.0.0.1:" in err
    assert len(err.strip().splitlines()) == 1


def test_cli_warns_in_one_line_before_binding_anything_but_loopback():
    proc = _start_cli("--host", "192.0.2.1", "--port", "0")  # TEST-NET-1: not ours, bind fails
    _, err = proc.communicate(timeout=BOUND)
    warning, error = err.strip().splitlines()
    assert "warning: 192.0.2.1 is not a loopback address" in warning
    assert proc.returncode == 1 and "cannot serve on 192.0.2.1:0" in error


def test_query_dp_ranks_answers_json_over_real_http():
    with reference.fixed.BootstrapServer() as server, requests.Session() as http:
        base = f"http://{server.address}"
        http.post(f"{base}/register_dp_rank", json={"bootstrap_room": 3, "dp_rank": 2}, timeout=5)
        reply = http.post(f"{base}/query_dp_ranks", json={"bootstrap_rooms": [3, 4]}, timeout=5)
        assert json.loads(reply.text) == {"3": 2}
