"""`RankProcess`: start a rank in its own OS process and talk to it with bounded waits.

Every call has a deadline: a rank that does not answer in time is killed and the call
raises `RankError` with the tail of the rank's stderr (where Mooncake and NIXL log), so
a hung transfer engine turns into a failed test or an `unknown` verdict, never a hang.
`close()` asks the rank to quit, waits, kills it if it must, and closes every pipe.
"""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from reference.dataplane.base import BackendUnavailable, MemoryRegistration, WriteResult
from reference.dataplane.discovery import default_device

STARTUP_TIMEOUT = 60.0  # seconds: importing a backend on a busy 2-core machine can take a while
CALL_TIMEOUT = 30.0
QUIT_TIMEOUT = 5.0
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # so the child imports this same `reference`


class RankError(RuntimeError):
    """A rank did not answer in time, died, or could not do what was asked."""


class RankProcess:
    def __init__(
        self, backend: str, device: str | None = None, startup_timeout: float = STARTUP_TIMEOUT
    ) -> None:
        self.backend = backend
        device = device or default_device()
        self._log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed by close())
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")])}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "reference.dataplane.rank", "--backend", backend, "--device", device],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=env,
        )
        try:
            hello = self._answer(startup_timeout)
        except RankError:
            self.close()
            raise
        if not hello["ok"]:
            self.close()
            raise (BackendUnavailable if hello.get("unavailable") else RankError)(hello["error"])
        self.pid: int = hello["pid"]

    def call(self, op: str, *, wait: float = CALL_TIMEOUT, **args: Any) -> dict[str, Any]:
        if self._proc.poll() is not None or self._proc.stdin is None:
            raise RankError(f"{self.backend} rank has exited ({self._proc.returncode}){self._tail()}")
        self._proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self._proc.stdin.flush()
        answer = self._answer(wait)
        if not answer["ok"]:
            raise RankError(f"{self.backend} rank: {op} failed: {answer['error']}")
        return answer

    def _answer(self, timeout: float) -> dict[str, Any]:
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout)
        line = self._proc.stdout.readline() if ready else ""
        if not line:
            self._proc.kill()
            self._proc.wait(QUIT_TIMEOUT)
            why = f"no answer within {timeout:g}s" if not ready else "exited"
            raise RankError(f"{self.backend} rank {why}{self._tail()}")
        return json.loads(line)

    def _tail(self, lines: int = 3) -> str:
        self._log.seek(0)
        tail = [line.strip() for line in self._log.read().splitlines() if line.strip()][-lines:]
        return (": " + " | ".join(tail)) if tail else ""

    # The operations scenarios and tests use, typed.
    def allocate(self, num_pages: int, page_size: int) -> None:
        self.call("allocate", num_pages=num_pages, page_size=page_size)

    def register(self) -> MemoryRegistration:
        return MemoryRegistration.from_json(self.call("register")["registration"])

    def fill(self, seed: int) -> str:
        return self.call("fill", seed=seed)["checksum"]

    def checksum(self, pages: list[int] | None = None) -> str:
        return self.call("checksum", pages=pages)["checksum"]

    def read(self, first: int, count: int = 1) -> bytes:
        return base64.b64decode(self.call("read", first=first, count=count)["data"])

    def store(self, first: int, data: bytes) -> None:
        self.call("store", first=first, data=base64.b64encode(data).decode())

    def write(
        self, target: MemoryRegistration, src_pages: list[int], dst_pages: list[int], timeout: float = 5.0
    ) -> WriteResult:
        args = {
            "target": target.to_json(),
            "src_pages": src_pages,
            "dst_pages": dst_pages,
            "timeout": timeout,
        }
        return WriteResult(**self.call("write", wait=timeout + CALL_TIMEOUT, **args)["result"])

    def close(self) -> None:
        """Stop the rank (quit, then kill after a bound) and release its pipes and log."""
        proc = self._proc
        if proc.poll() is None and proc.stdin is not None:
            try:
                proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                proc.stdin.flush()
                proc.wait(QUIT_TIMEOUT)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait(QUIT_TIMEOUT)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
        self._log.close()

    def __enter__(self) -> RankProcess:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
