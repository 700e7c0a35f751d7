"""The bootstrap server's connections: one-line answers to what aiohttp's parser rejects,
405 with `Allow` for unknown methods, one log line per rejection, and slow clients
(slowloris heads, stalled bodies) cut after the read timeout."""

import logging
import socket
import time

import pytest
from rawhttp import exchange, health_latency, read_to_eof, split_response

from reference.common.bootstrap_http import LOG, READ_TIMEOUT
from reference.common.oneline_log import OneLineRateLimit
from reference.fixed.bootstrap_server import BootstrapServer

HOST = "Host: t\r\n"


@pytest.fixture
def server():
    with BootstrapServer("127.0.0.1", 0, read_timeout=0.5) as running:
        yield running


@pytest.mark.parametrize(
    ("request_bytes", "status", "needle"),
    [
        (b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n", 400, "Missing 'Host' header"),
        (b"\x00\x01garbage\r\n\r\n", 400, "malformed HTTP request"),
        (b"GET /health HTTP/9.9\r\n" + HOST.encode() + b"\r\n", 400, "Invalid HTTP version"),
        (b"GET /health HTTP/1.1\r\n" + HOST.encode() + b"Bad Header: y\r\n\r\n", 400, "header"),
        (b"PUT /route HTTP/1.1\r\n" + HOST.encode() + b"Content-Length: zz\r\n\r\n", 400, "Content-Length"),
        (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n", 400, "malformed HTTP request"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400, "HTTPS"),
        (b"FOO /nope HTTP/1.1\r\n" + HOST.encode() + b"\r\n", 404, "no route /nope"),
    ],
)
def test_parser_errors_get_one_line_bodies_that_do_not_echo_the_request(
    server, request_bytes, status, needle
):
    got, _, body = split_response(exchange(server.port, request_bytes))
    text = body.decode()
    assert got == status and needle in text, text
    assert "\n" not in text and "\r" not in text and "b'" not in text and "^" not in text
    assert health_latency(server.port) < 1.0


@pytest.mark.parametrize(
    ("line", "allow"),
    [("FOO /route", "GET, PUT"), ("get /route", "GET, PUT"), ("post /health", "GET"),
     ("BREW /query_dp_ranks", "POST"), ("DELETE /route", "GET, PUT"), ("POST /route", "GET, PUT")],
)  # fmt: skip
def test_unknown_and_wrong_methods_get_405_with_allow(server, line, allow):
    raw = exchange(server.port, f"{line} HTTP/1.1\r\n{HOST}Content-Length: 0\r\n\r\n".encode())
    status, headers, body = split_response(raw)
    assert (status, headers.get("allow")) == (405, allow), raw
    assert "not allowed" in body.decode() and "\n" not in body.decode()


def test_a_rejected_request_is_one_log_record_without_traceback(server, caplog, monkeypatch):
    monkeypatch.setattr(LOG, "filters", [OneLineRateLimit()])  # a full bucket: earlier tests spent theirs
    caplog.set_level(logging.INFO, logger=LOG.name)
    exchange(server.port, b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")
    deadline = time.monotonic() + 5
    while not caplog.records and time.monotonic() < deadline:
        time.sleep(0.01)
    (record,) = caplog.records
    assert record.exc_info is None and record.levelno == logging.INFO
    assert "\n" not in record.getMessage() and "Missing 'Host' header" in record.getMessage()


def _slowloris(port: int, count: int) -> list[socket.socket]:
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\nX-Slow: ")  # a head that never ends
        socks.append(sock)
    return socks


def test_slowloris_heads_are_closed_after_the_read_timeout(server):
    socks = _slowloris(server.port, 20)
    try:
        started = time.monotonic()
        assert health_latency(server.port) < 1.0  # the held connections block nobody
        for sock in socks:
            sock.sendall(b"a")  # still trickling: the bound is from the connect, not the last byte
            assert read_to_eof(sock, bound=5.0) == b""  # closed by the server, nothing sent
        assert time.monotonic() - started < 0.5 + 3.0
    finally:
        for sock in socks:
            sock.close()


def test_a_stalled_body_gets_408_after_the_read_timeout_and_changes_nothing(server):
    before = dict(server.table.room_to_dp_rank)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"POST /register_dp_rank HTTP/1.1\r\nHost: t\r\nContent-Length: 40\r\n\r\n{")
        status, _, body = split_response(read_to_eof(sock, bound=5.0))
    assert status == 408 and "body not received within 0.5 s" in body.decode()
    assert server.table.room_to_dp_rank == before


def test_the_default_read_timeout_is_a_few_seconds():
    assert 1.0 <= READ_TIMEOUT <= 10.0
    assert BootstrapServer().read_timeout == READ_TIMEOUT
