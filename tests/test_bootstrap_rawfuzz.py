"""Raw-socket fuzz of `python -m reference.bootstrap`: malformed HTTP from hypothesis.

Request lines with odd methods, targets and versions, headers with control bytes, bare
LF or CR line ends, truncated heads, bodies shorter or longer than announced, and plain
random bytes, each on its own connection. A request that was cut, or that has no answer
within `PATIENCE`, is followed by a half-close, so it ends at once instead of after the
read timeout (aiohttp then closes without answering: allowed). After every one the
server must answer `/health`; no answer may be a 5xx; a 4xx body is one line; and at
the end stderr holds no traceback. Same cases every run (`derandomize`).
"""

import contextlib
import re
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rawhttp import health_latency, read_response, read_to_eof, start_cli

CASES = 300
PATIENCE = 0.05  # s to wait for an answer before half-closing; slower answers go unchecked
CRLF = st.sampled_from([b"\r\n", b"\n", b"\r", b"\r\r\n", b"\n\r"])
KNOWN_METHOD = st.sampled_from([b"GET", b"PUT", b"POST", b"get", b"FOO", b"DELETE", b"CONNECT", b"PRI", b""])
METHOD = st.one_of(KNOWN_METHOD, KNOWN_METHOD, st.binary(min_size=1, max_size=12))
TARGET = st.one_of(
    st.sampled_from([b"/route", b"/health", b"/register_dp_rank", b"/query_dp_ranks", b"*", b""]),
    st.builds(
        lambda path, query: path + query,
        st.sampled_from([b"/route", b"/x", b"//", b"/%00", b"http://h/route"]),
        st.binary(max_size=40).map(lambda q: b"?" + q),
    ),
)
VERSION = st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/9.9", b"HTTP/1", b"http/1.1", b"", b"HTTP/1.1 x"])
ODD_HEADERS = [
    b"Host: t", b"Content-Length: 5", b"Content-Length: -1", b"Content-Length: 99999999999",
    b"Transfer-Encoding: chunked", b"Transfer-Encoding: gzip, chunked", b"Expect: 100-continue",
    b"Content-Length: 3\r\nContent-Length: 4", b"Connection: upgrade\r\nUpgrade: websocket",
]  # fmt: skip
HEADER = st.one_of(
    st.sampled_from(ODD_HEADERS),
    st.builds(lambda name, value: name + b": " + value, st.binary(max_size=12), st.binary(max_size=40)),
)


BODY = st.one_of(
    st.sampled_from([b'{"bootstrap_room": 1, "dp_rank": 0}', b'{"bootstrap_rooms": [1, 2]}', b"{", b""]),
    st.binary(max_size=60),
)
MUTATIONS = ("method", "target", "version", "eol", "header", "no host", "length", "cut")


@st.composite
def malformed_requests(draw) -> tuple[bytes, bool]:
    """(bytes, cut): a valid request with up to three things broken, or random bytes."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.binary(min_size=1, max_size=300)), False
    method = draw(st.sampled_from([b"GET", b"PUT", b"POST"]))
    target = draw(st.sampled_from([b"/route", b"/health", b"/register_dp_rank", b"/query_dp_ranks"]))
    version, eol, body = b"HTTP/1.1", b"\r\n", draw(BODY)
    headers = [b"Host: t", b"Content-Length: %d" % len(body)]
    broken = set(draw(st.lists(st.sampled_from(MUTATIONS), max_size=3)))
    method = draw(METHOD) if "method" in broken else method
    target = draw(TARGET) if "target" in broken else target
    version = draw(VERSION) if "version" in broken else version
    eol = draw(CRLF) if "eol" in broken else eol
    headers = headers[1:] if "no host" in broken else headers
    if "length" in broken:
        headers = [h for h in headers if not h.startswith(b"Content-Length")] + [
            b"Content-Length: %d" % draw(st.integers(-2, 200))
        ]
    headers += [draw(HEADER)] if "header" in broken else []
    request = eol.join([method + b" " + target + b" " + version, *headers]) + eol + eol + body
    if "cut" in broken:
        return request[: draw(st.integers(0, len(request) - 1))], True
    return request, False


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    """One `python -m reference.bootstrap`, stderr to a file read at the end."""
    errfile = tmp_path_factory.mktemp("bootstrap") / "stderr"
    with open(errfile, "wb") as err:
        proc, port = start_cli(stderr=err)
    try:
        yield port, errfile
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
        proc.stdout.close()


def send(port: int, data: bytes, cut: bool) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        with contextlib.suppress(OSError):  # the server may answer and close first
            sock.sendall(data)
            if not cut:
                sock.settimeout(PATIENCE)
                with contextlib.suppress(TimeoutError):
                    first = sock.recv(65536)
                    return read_response(sock, first, bound=8.0) if first else b""
            sock.shutdown(socket.SHUT_WR)
        return read_to_eof(sock, bound=8.0)


def check_first_response(raw: bytes) -> None:
    if not raw:
        return  # closed without an answer (a truncated head, say): allowed
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.split(b"\r\n")
    assert status_line.startswith(b"HTTP/1."), raw[:80]
    status = int(status_line.split()[1])
    assert status < 500, raw[:200]
    if status >= 400:
        lengths = [int(h.split(b":")[1]) for h in header_lines if h.lower().startswith(b"content-length:")]
        first_body = body[: lengths[0]] if lengths else body
        assert b"\n" not in first_body and b"\r" not in first_body, raw[:300]


def test_malformed_http_never_stops_health_or_writes_a_traceback(cli):
    port, errfile = cli

    @settings(max_examples=CASES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(case=malformed_requests())
    def one_case(case):
        check_first_response(send(port, *case))
        assert health_latency(port, probes=1) < 1.0

    one_case()
    text = errfile.read_text()
    assert "Traceback" not in text and "Error handling request" not in text, text[:2000]
    assert not re.search(r"rejected request from \S+: 5[0-9][0-9]", text), text[:2000]
    assert all(len(line) < 700 for line in text.splitlines())
