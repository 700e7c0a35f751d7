"""The `nixl` backend: an NVIDIA NIXL agent with the UCX plugin, DRAM (or VRAM) regions.

sglang's `nixl` transfer backend creates one agent per rank; the decode side registers
its KV regions and ships the agent's metadata to the prefill, which loads it
(`add_remote_agent`) and posts WRITE requests with a notification message. Here each
plane is an agent named uniquely per process, so a restarted receiver is a new agent:
a write through the old registration hits `NIXL_ERR_REMOTE_DISCONNECT` (its agent
is gone), and an address the new agent never registered hits `NIXL_ERR_NOT_FOUND`.

NIXL will not load new metadata under a name it already knows, so a registration
whose metadata changed replaces the old entry first (`remove_remote_agent`).
The API comes from `nixl_cu12` (what `nixl-cu12==1.5.1` installs), or the `nixl`
loader package when present; both log to stdout, which we send to stderr.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import logging
import os
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any

from reference.dataplane.base import (
    BackendUnavailable,
    DataPlane,
    MemoryRegistration,
    TransferFailed,
    page_runs,
)
from reference.dataplane.pages import KVPages, TensorPages, resolve_device

POLL_S = 0.0005  # between transfer-state checks while a write is in flight


def load_api() -> Any:
    """The module holding `nixl_agent`, preferring the CUDA-12 build that the extra installs."""
    try:
        api = importlib.import_module("nixl_cu12._api")
    except ImportError:
        try:
            api = importlib.import_module("nixl._api")
        except ImportError as exc:
            raise BackendUnavailable(import_reason(exc)) from None
    for handler in logging.getLogger("nixl").handlers:
        if isinstance(handler, logging.StreamHandler) and handler.stream is sys.stdout:
            handler.setStream(sys.stderr)  # keep stdout clean for --json output
    return api


def mem_type(device: str) -> str:
    return "DRAM" if device == "cpu" else "VRAM"


def device_id(device: str) -> int:
    return int(device.split(":")[1]) if ":" in device else 0


def import_reason(exc: ImportError) -> str:
    if getattr(exc, "name", "") in ("nixl", "nixl._api", "nixl_cu12"):
        return "module nixl missing (pip install -c ci/constraints.txt '.[nixl]')"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"nixl failed to import: {text}"


class NixlPlane(DataPlane):
    name = "nixl"

    def __init__(self, device: str = "cpu") -> None:
        device = resolve_device(device)
        api = load_api()
        self.device = device
        self.agent_name = f"rank-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._agent = api.nixl_agent(self.agent_name, api.nixl_agent_config(backends=["UCX"]))
        if "UCX" not in self._agent.backends:
            raise BackendUnavailable(f"nixl has no UCX plugin here (plugins: {self._agent.plugin_list})")
        self._regions: dict[int, Any] = {}  # base address -> registered descriptor list
        self._remotes: dict[str, str] = {}  # remote agent name -> metadata loaded for it

    def allocate(self, num_pages: int, page_size: int) -> KVPages:
        if self.device == "cpu":
            return super().allocate(num_pages, page_size)
        return TensorPages(num_pages, page_size, self.device)

    def _ensure_registered(self, pages: KVPages) -> None:
        if pages.address not in self._regions:
            region = [(pages.address, pages.nbytes, device_id(pages.device), "")]
            self._regions[pages.address] = self._agent.register_memory(region, mem_type(pages.device))

    def register(self, pages: KVPages) -> MemoryRegistration:
        self._ensure_registered(pages)
        meta = base64.b64encode(self._agent.get_agent_metadata()).decode()
        return MemoryRegistration(
            self.name, self.agent_name, pages.address, pages.num_pages, pages.page_size, meta, pages.device
        )

    def deregister(self, registration: MemoryRegistration) -> None:
        region = self._regions.pop(registration.address, None)
        if region is not None:
            self._agent.deregister_memory(region)

    def _remote(self, target: MemoryRegistration) -> str:
        if self._remotes.get(target.peer) != target.meta:
            if target.peer in self._remotes:
                self._agent.remove_remote_agent(target.peer)
            self._agent.add_remote_agent(base64.b64decode(target.meta))
            self._remotes[target.peer] = target.meta
        return target.peer

    def _write(
        self,
        src: KVPages,
        src_pages: Sequence[int],
        target: MemoryRegistration,
        dst_pages: Sequence[int],
        timeout: float,
    ) -> None:
        self._ensure_registered(src)
        remote, size, runs = self._remote(target), src.page_size, page_runs(src_pages, dst_pages)
        here, there = device_id(src.device), device_id(target.device)
        local = [(src.address + s * size, n * size, here) for s, _, n in runs]
        far = [(target.address + d * size, n * size, there) for _, d, n in runs]
        local_descs = self._agent.get_xfer_descs(local, mem_type(src.device))
        far_descs = self._agent.get_xfer_descs(far, mem_type(target.device))
        handle = self._agent.initialize_xfer(
            "WRITE", local_descs, far_descs, remote, f"kv:{uuid.uuid4().hex}".encode()
        )
        try:
            state, deadline = self._agent.transfer(handle), time.monotonic() + timeout
            while state == "PROC" and time.monotonic() < deadline:
                time.sleep(POLL_S)
                state = self._agent.check_xfer_state(handle)
            if state != "DONE":
                raise TransferFailed(f"nixl WRITE to {remote} ended {state} (timeout {timeout:g}s)")
        finally:
            with contextlib.suppress(Exception):  # a timed-out request may refuse release
                handle.release()

    def close(self) -> None:
        for region in self._regions.values():
            self._agent.deregister_memory(region)
        self._regions.clear()
        for remote in self._remotes:
            self._agent.remove_remote_agent(remote)
        self._remotes.clear()
        self._agent = None
