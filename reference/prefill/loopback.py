"""A prefill instance in its own OS process, seen from the decode side.

`LoopbackPrefill` starts `python -m reference.prefill.process` and waits (bounded) for
its ready line, which names its pid, bootstrap port and rank ports. `kill()` is a
crash (SIGKILL) and reaps the process; `restart()` kills it and starts a new process
behind the same bootstrap port, whose ranks bind new ephemeral ports; `close()` asks
the process to stop (closes its stdin) and kills it if it does not within the bound.
Use it as a context manager: the child is reaped however the block ends.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = str(Path(__file__).resolve().parents[2])  # the folder that holds `reference`
START_TIMEOUT = 30.0  # real seconds for a child to import, bind and register
STOP_TIMEOUT = 5.0


class LoopbackPrefill:
    host = "127.0.0.1"  # its address (a netns prefill: its namespace's)

    def _command(self, args: list[str]) -> list[str]:
        """The command line that starts the prefill process (netns: inside its namespace)."""
        return [sys.executable, "-m", "reference.prefill.process", *args]

    def __init__(
        self,
        tp_size: int = 2,
        cp_size: int = 1,
        send_timeout: float = 1.0,
        bootstrap_port: int = 0,
        backend: str = "default",
    ) -> None:
        self.tp_size, self.cp_size, self.send_timeout = tp_size, cp_size, send_timeout
        self.backend = backend  # the KV data plane its ranks write with
        self.bootstrap_port = bootstrap_port  # 0: the first start picks one; restarts keep it
        self.rank_ports: list[int] = []
        self.pids: list[int] = []
        self.process: subprocess.Popen | None = None
        self.start()

    @property
    def bootstrap_addr(self) -> str:
        return f"{self.host}:{self.bootstrap_port}"

    def start(self) -> None:
        args = ["--bootstrap-port", str(self.bootstrap_port), "--tp-size", str(self.tp_size),
                "--cp-size", str(self.cp_size), "--send-timeout", str(self.send_timeout),
                "--backend", self.backend]  # fmt: skip
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
        }
        self.process = subprocess.Popen(
            self._command(args),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=ROOT,
        )  # fmt: skip
        try:
            ready = self._read_ready(self.process)
        except BaseException:
            self.kill()
            raise
        self.bootstrap_port, self.rank_ports = ready["bootstrap_port"], ready["rank_ports"]
        self.pids.append(ready["pid"])

    def _read_ready(self, process: subprocess.Popen) -> dict[str, Any]:
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            if not selector.select(START_TIMEOUT):
                raise RuntimeError(f"prefill process did not report ready within {START_TIMEOUT} s")
        line = process.stdout.readline()
        if not line:
            code = process.wait(STOP_TIMEOUT)
            raise RuntimeError(f"prefill process exited with code {code} before it was ready")
        return json.loads(line)

    def kill(self) -> None:
        """Crash the prefill (SIGKILL) and reap it."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        self._reap(process)

    def restart(self) -> None:
        self.kill()
        self.start()

    def close(self) -> None:
        """Stop the prefill cleanly (close its stdin); kill it past the bound."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
        self._reap(process)

    @staticmethod
    def _reap(process: subprocess.Popen) -> None:
        deadline = time.monotonic() + STOP_TIMEOUT
        while process.poll() is None and time.monotonic() < deadline:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                break
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()

    def __enter__(self) -> LoopbackPrefill:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
