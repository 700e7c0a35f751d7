"""The `default` backend on loopback: KV pages as bytes over ZMQ on 127.0.0.1.

No RDMA engine, but the same contract as one: the receiver serves its registered
buffers on a ROUTER socket from a background thread, and a registration names that
endpoint plus a random token. A write is one request (token, destination pages,
payload) answered by `OK` once every byte is in place, or by one line saying why not.
A restarted receiver has a new endpoint and new tokens, so a write through an old
registration either reaches nobody (no answer within the timeout) or is refused
(`unknown registration`): it fails, as a stale RDMA key would, and never lands.

The `torch` backend is this wire with tensor memory at both ends (`torch_plane.py`).
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Sequence

import zmq

from reference.dataplane.base import DataPlane, MemoryRegistration, TransferFailed, page_runs
from reference.dataplane.pages import KVPages

HOST = "127.0.0.1"
POLL_MS = 50  # how often the server thread checks for its stop flag
STOP_BOUND = 5.0  # seconds close() waits for the server thread


class PageServer:
    """Receives page writes for the buffers registered with it, on its own thread."""

    def __init__(self, context: zmq.Context) -> None:
        self._socket = context.socket(zmq.ROUTER)
        self._socket.setsockopt(zmq.LINGER, 0)
        port = self._socket.bind_to_random_port(f"tcp://{HOST}")
        self.endpoint = f"tcp://{HOST}:{port}"
        self.buffers: dict[int, KVPages] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=f"page-server-{port}", daemon=True)
        self._thread.start()

    def add(self, token: int, pages: KVPages) -> None:
        with self._lock:
            self.buffers[token] = pages

    def remove(self, token: int) -> None:
        with self._lock:
            self.buffers.pop(token, None)

    def _serve(self) -> None:
        while not self._stop.is_set():
            if self._socket.poll(POLL_MS):
                client, *frames = self._socket.recv_multipart()
                request_id, answer = self._answer(frames)
                self._socket.send_multipart([client, request_id, answer.encode()])
        self._socket.close()

    def _answer(self, frames: list[bytes]) -> tuple[bytes, str]:
        if len(frames) != 3:
            return b"", f"expected 3 frames (id, header, payload), got {len(frames)}"
        try:
            return frames[0], self._apply(json.loads(frames[1]), frames[2])
        except Exception as exc:  # a bad request must not kill the server thread
            return frames[0], f"bad request: {type(exc).__name__}: {exc}"

    def _apply(self, header: dict, payload: bytes) -> str:
        with self._lock:
            pages = self.buffers.get(header["token"])
        if pages is None:
            return "unknown registration (the buffer was deregistered or its owner restarted)"
        if sum(count for _, count in header["runs"]) * pages.page_size != len(payload):
            return f"payload of {len(payload)} bytes does not match the pages named"
        offset = 0
        for dst, count in header["runs"]:
            if dst < 0 or dst + count > pages.num_pages:
                return f"pages {dst}..{dst + count - 1} outside the buffer"
            size = count * pages.page_size
            pages.write(dst, payload[offset : offset + size])
            offset += size
        return "OK"

    def close(self) -> None:
        self._stop.set()
        self._thread.join(STOP_BOUND)


class ZmqPlane(DataPlane):
    name = "default"

    def __init__(self) -> None:
        self._context = zmq.Context()
        self._server = PageServer(self._context)

    def register(self, pages: KVPages) -> MemoryRegistration:
        token = secrets.randbits(62)
        self._server.add(token, pages)
        return MemoryRegistration(
            self.name, self._server.endpoint, token, pages.num_pages, pages.page_size, device=pages.device
        )

    def deregister(self, registration: MemoryRegistration) -> None:
        self._server.remove(registration.address)

    def _write(
        self,
        src: KVPages,
        src_pages: Sequence[int],
        target: MemoryRegistration,
        dst_pages: Sequence[int],
        timeout: float,
    ) -> None:
        runs = page_runs(src_pages, dst_pages)
        payload = b"".join(src.read(s, n) for s, _, n in runs)
        header = json.dumps({"token": target.address, "runs": [(d, n) for _, d, n in runs]}).encode()
        answer = self._request(target.peer, header, payload, timeout)
        if answer != "OK":
            raise TransferFailed(f"{target.peer} refused the write: {answer}")

    def _request(self, endpoint: str, header: bytes, payload: bytes, timeout: float) -> str:
        request_id = secrets.token_bytes(8)
        sock = self._context.socket(zmq.DEALER)
        try:
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.IMMEDIATE, 1)  # queue nothing for a peer that is not connected
            sock.setsockopt(zmq.SNDTIMEO, int(timeout * 1000))
            sock.connect(endpoint)
            try:
                sock.send_multipart([request_id, header, payload])
            except zmq.Again:
                raise TransferFailed(f"no connection to {endpoint} within {timeout:g}s") from None
            if not sock.poll(int(timeout * 1000)):
                raise TransferFailed(f"no answer from {endpoint} within {timeout:g}s")
            got_id, answer = sock.recv_multipart()
            return answer.decode() if got_id == request_id else "answer to another request"
        finally:
            sock.close()

    def close(self) -> None:
        self._server.close()
        self._context.term()
