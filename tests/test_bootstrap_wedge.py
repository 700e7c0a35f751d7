"""`python -m reference.bootstrap` cannot be wedged through its own stderr.

Started with `stderr=PIPE` and the pipe never read, the server used to freeze after
about a hundred malformed requests: each one wrote a ~615-byte traceback from the
server thread, which blocked once the 64 KiB pipe was full. Now every rejected request
is at most one rate-limited log line, written by a background thread.
"""

import signal
import time

import pytest
from rawhttp import BOUND, flood, health_latency, start_cli

from reference.common.oneline_log import MAX_LINE

NO_HOST = b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n"  # HTTP/1.1 requires Host: 400


@pytest.mark.timeout(240)  # ~5 s on an idle machine; over 45 s when six suites share two cores
def test_10000_malformed_requests_with_stderr_never_read_leave_health_fast():
    proc, port = start_cli()
    try:
        started = time.monotonic()
        firsts = flood(port, NO_HOST, 10_000, bound=200.0)
        elapsed = time.monotonic() - started
        assert len(firsts) == 10_000, f"only {len(firsts)} of 10000 exchanges within the bound"
        assert set(firsts) == {b"HTTP/1.0 400 Bad Request"}
        assert health_latency(port) < 0.1
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=BOUND)
    assert proc.returncode == 0
    lines = err.decode().splitlines()
    assert "Traceback" not in err.decode()
    assert all(len(line) < 2 * MAX_LINE for line in lines)
    # the rate limit: a burst of 20, then one line a second (plus the rounding of a few)
    assert len(lines) <= 20 + elapsed + 5, f"{len(lines)} lines in {elapsed:.1f} s"
    assert "Missing 'Host' header" in lines[0] and "similar lines suppressed" in lines[-1]
