"""Log lines a server can afford: one line per record, rate-limited, never blocking.

A server thread that writes to stderr blocks as soon as nobody reads the pipe (64 KiB on
Linux); aiohttp's default is a ~615-byte traceback per request its parser rejects, so a
bootstrap server started with `stderr=PIPE` froze after about a hundred malformed
requests. Two pieces keep that from happening:

- `OneLineRateLimit`, a `logging.Filter`: every record it passes becomes one line (the
  exception as `Type: first line`, no traceback; control characters escaped, at most
  `MAX_LINE` characters), and a token bucket (`burst` lines, then `per_second`) drops
  the rest, counting them; the next line that passes says how many were suppressed.
- `BackgroundStderr`, a `logging.Handler` for command-line entry points: `emit` only
  queues the formatted line (a full queue drops and counts it); a daemon thread writes
  to file descriptor 2. A stderr nobody reads stalls that thread, never the caller.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable

MAX_LINE = 300  # characters of one log line, after escaping


def one_line(text: str, limit: int = MAX_LINE) -> str:
    """`text` with control characters escaped (`\\n` -> `\\\\n`), cut to `limit` characters."""
    escaped = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    return escaped if len(escaped) <= limit else escaped[: limit - 3] + "..."


def flatten(record: logging.LogRecord, note: str = "") -> None:
    """Make `record` one line in place: its message plus `Type: first line` of its exception."""
    message = record.getMessage()
    exc = record.exc_info[1] if record.exc_info else None
    if exc is not None:
        first = str(exc).strip().splitlines()
        message += f": {type(exc).__name__}" + (f": {first[0].strip()}" if first else "")
    record.msg, record.args = one_line(message + note), None
    record.exc_info = record.exc_text = record.stack_info = None


class OneLineRateLimit(logging.Filter):
    """Pass at most `burst` records at once and `per_second` on average, each as one line."""

    def __init__(
        self, burst: int = 20, per_second: float = 1.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.burst, self.per_second, self.clock = burst, per_second, clock
        self._tokens, self._last = float(burst), clock()
        self._lock = threading.Lock()
        self.suppressed = 0  # records dropped since the last one that passed
        self.suppressed_total = 0

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            now = self.clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.per_second)
            self._last = now
            if self._tokens < 1:
                self.suppressed += 1
                self.suppressed_total += 1
                return False
            self._tokens -= 1
            dropped, self.suppressed = self.suppressed, 0
        flatten(record, f" ({dropped} similar lines suppressed)" if dropped else "")
        return True


class BackgroundStderr(logging.Handler):
    """Queue formatted lines (at most `capacity`); a daemon thread writes them to `fd`."""

    def __init__(self, fd: int = 2, capacity: int = 1000, flush_timeout: float = 0.5) -> None:
        super().__init__()
        self.fd, self.flush_timeout = fd, flush_timeout
        self._lines: queue.Queue[str] = queue.Queue(capacity)
        self.dropped = 0
        self._writer = threading.Thread(target=self._write_forever, name="log-writer", daemon=True)
        self._writer.start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:  # a bad format string must not reach stderr as a traceback
            line = f"{record.levelname} {record.name}: unformattable log record"
        try:
            self._lines.put_nowait(one_line(line, 2 * MAX_LINE))
        except queue.Full:
            self.dropped += 1

    def _write_forever(self) -> None:
        while True:
            data = (self._lines.get() + "\n").encode("utf-8", "backslashreplace")
            try:
                while data:
                    data = data[os.write(self.fd, data) :]
            except OSError:  # stderr closed: nothing more can be said
                pass
            finally:
                self._lines.task_done()

    def flush(self) -> None:
        """Wait (at most `flush_timeout` s) for queued lines to be written; never longer."""
        end = time.monotonic() + self.flush_timeout
        while self._lines.unfinished_tasks and time.monotonic() < end:
            time.sleep(0.01)
