"""One rank in its own OS process, driven over JSON lines: `python -m reference.dataplane.rank`.

Prefill and decode are separate processes in sglang, and a restart is a new process:
new ports, new addresses, new registrations. Tests and scenarios start ranks with
`RankProcess` (remote.py) and send them one request per line on stdin; each answer is
one JSON line on the original stdout. Everything else the backends print (NIXL logs
on stdout, Mooncake's on stderr) goes to stderr, so it can never corrupt an answer.
The rank exits on `quit` or when its stdin closes, so it cannot outlive its parent.

Requests: `allocate {num_pages, page_size}`, `register`, `deregister`, `fill {seed}`,
`checksum {pages?}`, `read {first, count}` and `store {first, data}` (base64 page bytes),
`write {target, src_pages, dst_pages, timeout}`, `quit`.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from typing import Any, TextIO

from reference.dataplane.base import BackendUnavailable, DataPlane, MemoryRegistration
from reference.dataplane.discovery import BACKENDS, open_plane
from reference.dataplane.pages import KVPages


class Rank:
    def __init__(self, plane: DataPlane) -> None:
        self.plane = plane
        self.pages: KVPages | None = None
        self.registration: MemoryRegistration | None = None

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.pop("op", None)
        method = getattr(self, f"op_{op}", None)
        if method is None:
            return {"ok": False, "error": f"unknown op {op!r}"}
        return {"ok": True, **method(**request)}

    def _pages(self) -> KVPages:
        if self.pages is None:
            raise RuntimeError("allocate first")
        return self.pages

    def op_allocate(self, num_pages: int, page_size: int) -> dict[str, Any]:
        self.pages = self.plane.allocate(num_pages, page_size)
        return {"nbytes": self.pages.nbytes, "device": self.pages.device}

    def op_register(self) -> dict[str, Any]:
        self.registration = self.plane.register(self._pages())
        return {"registration": self.registration.to_json()}

    def op_deregister(self) -> dict[str, Any]:
        if self.registration is not None:
            self.plane.deregister(self.registration)
        return {}

    def op_fill(self, seed: int) -> dict[str, Any]:
        return {"checksum": self._pages().fill(seed)}

    def op_checksum(self, pages: list[int] | None = None) -> dict[str, Any]:
        return {"checksum": self._pages().checksum(pages)}

    def op_read(self, first: int, count: int) -> dict[str, Any]:
        return {"data": base64.b64encode(self._pages().read(first, count)).decode()}

    def op_store(self, first: int, data: str) -> dict[str, Any]:
        self._pages().write(first, base64.b64decode(data))
        return {}

    def op_write(
        self, target: dict, src_pages: list[int], dst_pages: list[int], timeout: float
    ) -> dict[str, Any]:
        registration = MemoryRegistration.from_json(target)
        result = self.plane.write_pages(self._pages(), src_pages, registration, dst_pages, timeout)
        return {"result": result.to_json()}


def serve(plane: DataPlane, requests: TextIO, answers: TextIO) -> None:
    rank = Rank(plane)
    for line in requests:
        request = json.loads(line)
        if request.get("op") == "quit":
            break
        try:
            answer = rank.handle(request)
        except Exception as exc:  # one failed request must not end the rank
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m reference.dataplane.rank")
    parser.add_argument("--backend", choices=BACKENDS, required=True)
    parser.add_argument(
        "--device", default=None, help="cpu, cuda[:N] or auto (default: $REFERENCE_KV_DEVICE or cpu)"
    )
    args = parser.parse_args()
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # library chatter goes to stderr
    try:
        plane = open_plane(args.backend, transport="loopback", device=args.device)
    except BackendUnavailable as exc:
        answers.write(json.dumps({"ok": False, "unavailable": True, "error": str(exc)}) + "\n")
        answers.flush()
        return 3
    except Exception as exc:
        answers.write(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}) + "\n")
        answers.flush()
        return 1
    answers.write(json.dumps({"ok": True, "pid": os.getpid(), "backend": plane.name}) + "\n")
    answers.flush()
    serve(plane, sys.stdin, answers)
    # Exit like a stopped server: the kernel closes every socket and frees every
    # registration at once. (Mooncake's engine takes a second to tear down politely.)
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
