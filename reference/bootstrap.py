"""`python -m reference.bootstrap`: serve one bootstrap server until interrupted.

The same server a prefill instance starts (upstream `CommonKVBootstrapServer`, default
port 8998), standalone, for poking at its routes by hand:

    python -m reference.bootstrap --host 127.0.0.1 --port 8998
    curl http://127.0.0.1:8998/health

It prints one line with the address it serves (useful with `--port 0`) and stops on
SIGINT or SIGTERM, exit 0. A busy port or bad flags get one line on stderr. `--host`
must be an IP address literal (an empty host would silently mean every interface);
anything but loopback gets a one-line warning, since the routes have no authentication.
Log records (one line per rejected request, rate-limited) go to stderr from a
background thread, so a stderr pipe nobody reads never stalls the server.
"""

from __future__ import annotations

import argparse
import importlib
import ipaddress
import logging
import signal
import sys
import threading
from collections.abc import Sequence

from reference.common.bootstrap_table import MAX_ROOMS
from reference.common.oneline_log import BackgroundStderr, OneLineRateLimit
from reference.oneline_args import OneLineParser
from reference.variants import SHIPPED

VARIANTS = {name: module for name, (module, _expected) in SHIPPED.items()}


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port 0..65535, got {text!r}")
    return int(text)


def _host(text: str) -> str:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an IP address such as 127.0.0.1 or ::1, got {text!r}"
        ) from None
    return text


def _count(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m reference.bootstrap", description=__doc__.splitlines()[0])
    parser.add_argument("--host", type=_host, default="127.0.0.1", help="an IP address literal")
    parser.add_argument("--port", type=_port, default=8998, help="0 picks a free port")
    parser.add_argument("--variant", choices=list(VARIANTS), default="fixed")
    parser.add_argument("--cleanup-interval", type=_seconds, default=120.0)
    parser.add_argument("--entry-ttl", type=_seconds, default=120.0)
    parser.add_argument("--max-rooms", type=_count, default=MAX_ROOMS, help="room_to_dp_rank bound")
    return parser


def log_to_stderr() -> None:
    """One line per record, rate-limited, written to stderr by a background thread."""
    handler = BackgroundStderr()
    handler.addFilter(OneLineRateLimit())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger("reference.bootstrap").setLevel(logging.INFO)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    prog = "python -m reference.bootstrap"
    if not ipaddress.ip_address(args.host).is_loopback:
        print(
            f"{prog}: warning: {args.host} is not a loopback address: the routes have no "
            "authentication and other machines can reach them",
            file=sys.stderr,
        )
    log_to_stderr()
    variant = importlib.import_module(VARIANTS[args.variant])
    server = variant.BootstrapServer(
        args.host,
        args.port,
        cleanup_interval=args.cleanup_interval,
        entry_ttl=args.entry_ttl,
        max_rooms=args.max_rooms,
    )
    try:
        server.start()
    except (OSError, RuntimeError) as exc:
        print(
            f"{prog}: error: cannot serve on {args.host}:{args.port}: {exc}",
            file=sys.stderr,
        )
        return 1
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"bootstrap server ({args.variant}) serving on http://{host}:{server.port}", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
