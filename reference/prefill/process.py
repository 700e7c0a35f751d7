"""The prefill instance as its own OS process (loopback transport).

`python -m reference.prefill.process --bootstrap-port N --tp-size 2` starts, as an
upstream prefill does: the bootstrap server (the fixed form; the lessons here test the
decode side) on 127.0.0.1:N, one ZMQ PULL socket per rank on an ephemeral port, and
registers each rank with `PUT /route` over real HTTP. It then prints one JSON line,
`{"pid", "bootstrap_port", "rank_ports"}`, and serves decode messages on one poll
loop: registrations, metadata (the transfer: KV bytes over ZMQ, then Success), aborts.
It stops cleanly when its stdin closes, and otherwise dies when killed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Callable
from contextlib import ExitStack

import requests
import zmq

from reference.dataplane import BACKENDS, KVWriter, ZmqBytesWriter, open_plane
from reference.dataplane.adapters import PlaneWriter
from reference.prefill.bootstrap import PrefillBootstrapServer
from reference.prefill.mock import registration_body
from reference.prefill.rank import PrefillRank
from reference.transport.loopback import LoopbackTransport

HOST = "127.0.0.1"
POLL_MS = 20


def _register(host: str, bootstrap_port: int, body: dict) -> None:
    reply = requests.put(f"http://{host}:{bootstrap_port}/route", json=body, timeout=5)
    if reply.status_code != 200:
        raise RuntimeError(f"PUT /route answered {reply.status_code}: {reply.text}")


def _watch_stdin(stop: threading.Event) -> None:
    sys.stdin.read()  # returns at EOF: the parent closed our stdin
    stop.set()


def _writer(backend: str, send: Callable[[str, list[bytes]], None], stack: ExitStack) -> KVWriter:
    """KV frames on the status link by default; a real backend's page writes otherwise."""
    if backend == "default":
        return ZmqBytesWriter(send)
    plane = stack.enter_context(open_plane(backend, transport="loopback"))
    return PlaneWriter(plane)


def _link(host: str, send_timeout: float) -> LoopbackTransport:
    """Loopback on 127.0.0.1; inside a netns host (`--host 198.18...`), that host's link."""
    if host == HOST:
        return LoopbackTransport(send_timeout=send_timeout)
    from reference.netns.transport import HostLink

    return HostLink(host, send_timeout=send_timeout)


def serve(
    bootstrap_port: int,
    tp_size: int,
    cp_size: int,
    send_timeout: float,
    backend: str = "default",
    host: str = HOST,
) -> None:
    server = PrefillBootstrapServer(host, bootstrap_port).start()
    link = _link(host, send_timeout)  # PUSH sockets to decode inboxes
    pulls: list[zmq.Socket] = []
    stack = ExitStack()
    try:
        send = lambda decode, frames: link.connect(f"tcp://{decode}").send(frames)  # noqa: E731
        writer, ranks, ports = _writer(backend, send, stack), [], []
        for cp in range(cp_size):
            for tp in range(tp_size):
                pull = link.ctx.socket(zmq.PULL)
                pull.setsockopt(zmq.LINGER, 0)
                ports.append(pull.bind_to_random_port(f"tcp://{host}"))
                pulls.append(pull)
                ranks.append(PrefillRank(cp * tp_size + tp, writer, send))
                _register(host, server.port, registration_body(host, ports[-1], tp, tp_size, cp, cp_size))
        print(
            json.dumps({"pid": os.getpid(), "bootstrap_port": server.port, "rank_ports": ports}), flush=True
        )
        stop = threading.Event()
        threading.Thread(target=_watch_stdin, args=(stop,), daemon=True).start()
        poller = zmq.Poller()
        for pull in pulls:
            poller.register(pull, zmq.POLLIN)
        while not stop.is_set():
            for sock, _ in poller.poll(POLL_MS):
                ranks[pulls.index(sock)].handle(sock.recv_multipart())
    finally:
        stack.close()
        for pull in pulls:
            pull.close()
        link.close()
        server.close()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m reference.prefill.process")
    parser.add_argument("--bootstrap-port", type=int, default=0)
    parser.add_argument("--tp-size", type=int, default=2)
    parser.add_argument("--cp-size", type=int, default=1)
    parser.add_argument("--send-timeout", type=float, default=1.0)
    parser.add_argument("--backend", choices=BACKENDS, default="default", help="KV data plane")
    parser.add_argument("--host", default=HOST, help="this prefill's address (netns: its namespace's)")
    args = parser.parse_args()
    try:
        serve(args.bootstrap_port, args.tp_size, args.cp_size, args.send_timeout, args.backend, args.host)
    except (OSError, RuntimeError, requests.RequestException) as exc:
        print(f"prefill: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
