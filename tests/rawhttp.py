"""Raw-socket HTTP helpers for the bootstrap server's tests: malformed requests, floods,
timed `/health` probes. Everything is on 127.0.0.1 with a bound on every wait."""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

BOUND = 10.0  # real seconds any single exchange may take
ROOT = Path(__file__).resolve().parents[1]


def start_cli(*args: str, stderr: Any = subprocess.PIPE) -> tuple[subprocess.Popen, int]:
    """`python -m reference.bootstrap --port 0 ARGS`: the process and the port it serves."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "reference.bootstrap", "--port", "0", *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    end, line = time.monotonic() + BOUND, b""
    while not line.endswith(b"\n") and time.monotonic() < end and proc.poll() is None:
        line += proc.stdout.readline() or b""
        time.sleep(0.01)
    if b"serving on http://127.0.0.1:" not in line:
        proc.kill()
        proc.communicate(timeout=BOUND)
        raise AssertionError(f"the server did not start: {line!r}")
    return proc, int(line.rsplit(b":", 1)[1])


def exchange(port: int, data: bytes, bound: float = BOUND) -> bytes:
    """Send `data` on a fresh connection and read until the server closes it (or `bound`)."""
    with socket.create_connection(("127.0.0.1", port), timeout=bound) as sock:
        with contextlib.suppress(OSError):  # the server may answer and close before all is sent
            sock.sendall(data)
        return read_to_eof(sock, bound)


def read_to_eof(sock: socket.socket, bound: float = BOUND) -> bytes:
    end, chunks = time.monotonic() + bound, []
    while time.monotonic() < end:
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def read_response(sock: socket.socket, first: bytes = b"", bound: float = BOUND) -> bytes:
    """Read one HTTP response (its head and Content-Length bytes of body), or to EOF."""
    end, data = time.monotonic() + bound, first
    while time.monotonic() < end:
        head, found, body = data.partition(b"\r\n\r\n")
        if found:
            lengths = [line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
            if lengths and len(body) >= int(lengths[0].split(b":")[1]):
                return data
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        data += chunk
    return data


def split_response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """(status, headers with lower-case names, body) of one HTTP/1.x response."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body


def flood(port: int, data: bytes, total: int, workers: int = 8, bound: float = 60.0) -> list[bytes]:
    """Send `data` `total` times, one connection each, `workers` at a time; the first
    reply line of each exchange, in no particular order."""
    end = time.monotonic() + bound
    share = [total // workers + (i < total % workers) for i in range(workers)]

    def run(count: int) -> list[bytes]:
        firsts = []
        for _ in range(count):
            if time.monotonic() > end:
                break
            firsts.append(exchange(port, data, bound=min(BOUND, end - time.monotonic())).split(b"\r\n")[0])
        return firsts

    with ThreadPoolExecutor(workers, thread_name_prefix="flood") as pool:
        return [line for part in pool.map(run, share) for line in part]


def health_latency(port: int, probes: int = 5) -> float:
    """Median seconds for `GET /health` on a fresh connection, answered 200 OK."""
    times = []
    for _ in range(probes):
        start = time.perf_counter()
        raw = exchange(port, b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", bound=2.0)
        times.append(time.perf_counter() - start)
        assert raw.startswith(b"HTTP/1.1 200") and raw.endswith(b"OK"), raw[:80]
    return statistics.median(times)
