"""How the bootstrap server treats connections: bounded reads, one-line errors, quiet logs.

Upstream runs aiohttp with its defaults. Three of them are a problem for a service that
must keep answering `/health` (see `reference/common/README.md`, "Bootstrap server"):

- A request aiohttp's parser rejects is logged as a traceback (~615 bytes) and answered
  with a multi-line body that echoes the raw request. Here `OneLineErrors.handle_error`
  answers one line, logs one line at INFO through `LOG` (rate-limited by
  `OneLineRateLimit`), and maps a method the parser does not know (`FOO /route`,
  `get /route`) to 405 with `Allow`, as the routes do for known methods.
- A connection may send its request head as slowly as it likes for an hour (aiohttp's
  keep-alive timeout, 3630 s, also bounds the wait for the first request). Here every
  connection must deliver a complete request head within `READ_TIMEOUT` of opening or
  of its previous response, or it is closed; `BootstrapServerBase` bounds the body read
  by the same number (408).
- Closing waits up to 60 s for requests in flight; here `SHUTDOWN_TIMEOUT`.

`serve(runner, sock, ...)` starts the listening server with this handler on an already
set-up `AppRunner`; the runner's cleanup shuts its connections down as usual.
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMethod, LineTooLong

from reference.common.bootstrap_table import ROUTES
from reference.common.oneline_log import OneLineRateLimit, one_line

READ_TIMEOUT = 5.0  # s: request head after connect or after the previous response; body; idle
SHUTDOWN_TIMEOUT = 1.0  # s: close() waits this long for requests in flight
LOG = logging.getLogger("reference.bootstrap.http")
LOG.addFilter(OneLineRateLimit())

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"  # RFC 9110 token: what a method may be
_ECHOED_BYTES = re.compile(r"(bytearray\()?b'.*?'\)?|(bytearray\()?b\".*?\"\)?")
# the request line as aiohttp's parser echoes it: b'METHOD /path HTTP/1.1'
_REQUEST_LINE = re.compile(rf"(?:^|\s)b['\"](?P<method>{_TOKEN}) (?P<path>/[^\s?'\"]*)\S* HTTP/")


def parser_error_reply(status: int, exc: BaseException | None) -> tuple[int, str, dict[str, str]]:
    """(status, one-line body, headers) for a request aiohttp rejected before routing."""
    if status >= 500:
        return status, f"{status} {HTTPStatus(status).phrase}", {}
    text = getattr(exc, "message", None) or str(exc or "")
    if isinstance(exc, BadHttpMethod):
        line = _REQUEST_LINE.search(text)
        if line is not None:
            method, path = line["method"], line["path"]
            allowed = ROUTES.get(path)
            if allowed is None:
                return 404, f"no route {one_line(path, 80)}", {}
            allow = ", ".join(sorted(allowed))
            return 405, f"{one_line(method, 40)} not allowed on {path} (allowed: {allow})", {"Allow": allow}
    if isinstance(exc, LineTooLong):
        return 400, f"malformed HTTP request: a line over {exc.args[1]} bytes", {}
    return 400, f"malformed HTTP request: {summary(text)}", {}


def summary(message: str) -> str:
    """aiohttp's parser message without the echoed request bytes and the caret line."""
    kept = [
        _ECHOED_BYTES.sub("...", line).strip().rstrip(":")
        for line in message.splitlines()
        if line.strip() and not line.strip().startswith(("b'", 'b"', "^"))
    ]
    return one_line(": ".join(kept) or "unparseable", 160)


class OneLineErrors(web.RequestHandler):
    """aiohttp's connection handler, answering parser-level errors with one line."""

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        status, text, headers = parser_error_reply(status, exc)
        LOG.info("rejected request from %s: %d %s", request.remote, status, text)
        if request.writer.output_size > 0:  # as aiohttp: part of a response went out already
            raise ConnectionError("response already started; cannot send the error")
        response = web.Response(status=status, text=text, headers=headers)
        response.force_close()
        return response


async def serve(
    runner: web.AppRunner, sock: socket.socket, read_timeout: float = READ_TIMEOUT, **handler_args: Any
) -> asyncio.Server:
    """Serve `runner` (set up) on the listening `sock` with `OneLineErrors` connections."""
    loop = asyncio.get_running_loop()
    manager = runner.server
    assert manager is not None, "runner.setup() first"

    def connection() -> OneLineErrors:
        return OneLineErrors(
            manager,
            loop=loop,
            keepalive_timeout=read_timeout,  # aiohttp: also the bound on an incomplete first head
            access_log=None,  # type: ignore[arg-type]  # aiohttp's documented "no access log"
            logger=LOG,
            lingering_time=read_timeout,
            **handler_args,
        )

    return await loop.create_server(connection, sock=sock)
