"""The `mooncake` backend: Mooncake's TransferEngine, TCP protocol, P2P handshake.

This is the engine sglang's default `mooncake` transfer backend drives. Each plane
initializes an engine on 127.0.0.1 with `P2PHANDSHAKE` metadata (no etcd or metadata
server: a peer's segment is fetched from its RPC port) and the `tcp` protocol, which
moves registered host memory without RDMA hardware (`mooncake-transfer-engine-non-cuda`
plus Debian's `libibverbs1`). The CUDA wheel registers GPU memory through the same
calls. The session id `127.0.0.1:<rpc port>` plays the part of sglang's
`mooncake_session_id`.

Staleness is the engine's own: after the receiver restarts, its old session refuses
connections, and an address it has not registered is rejected by its server
("not within any registered buffer"). Either way the batch write returns non-zero.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib import metadata
from typing import Any

from reference.dataplane.base import (
    BackendUnavailable,
    DataPlane,
    MemoryRegistration,
    TransferFailed,
    page_runs,
)
from reference.dataplane.pages import KVPages, TensorPages, resolve_device

HOST = "127.0.0.1"


def load_engine_class() -> Any:
    # Mooncake logs every INFO line to stderr; keep errors only unless the user asks otherwise.
    os.environ.setdefault("MC_LOG_LEVEL", "ERROR")
    try:
        from mooncake.engine import TransferEngine
    except ImportError as exc:
        raise BackendUnavailable(import_reason(exc)) from None
    return TransferEngine


def import_reason(exc: ImportError) -> str:
    text = str(exc)
    if "libibverbs" in text:
        return "library missing: libibverbs.so.1 (Debian: apt-get install libibverbs1)"
    if getattr(exc, "name", "") in ("mooncake", "mooncake.engine"):
        return "module mooncake missing (pip install -c ci/constraints.txt '.[mooncake]')"
    return f"mooncake.engine failed to import: {text.splitlines()[0] if text else type(exc).__name__}"


def host_only_build() -> bool:
    try:
        metadata.version("mooncake-transfer-engine-non-cuda")
    except metadata.PackageNotFoundError:
        return False
    return True


class MooncakePlane(DataPlane):
    name = "mooncake"

    def __init__(self, device: str = "cpu") -> None:
        device = resolve_device(device)
        if device != "cpu" and host_only_build():
            raise BackendUnavailable(
                "mooncake-transfer-engine-non-cuda registers host memory only; "
                "GPU memory needs the CUDA wheel (mooncake-transfer-engine)"
            )
        self.device = device
        self._engine = load_engine_class()()
        rc = self._engine.initialize(HOST, "P2PHANDSHAKE", "tcp", "")
        if rc != 0:
            raise BackendUnavailable(f"mooncake TransferEngine.initialize returned {rc}")
        self.session_id = f"{HOST}:{self._engine.get_rpc_port()}"
        self._registered: dict[int, int] = {}  # base address -> length

    def allocate(self, num_pages: int, page_size: int) -> KVPages:
        if self.device == "cpu":
            return super().allocate(num_pages, page_size)
        return TensorPages(num_pages, page_size, self.device)

    def _ensure_registered(self, pages: KVPages) -> None:
        if pages.address in self._registered:
            return
        rc = self._engine.register_memory(pages.address, pages.nbytes)
        if rc != 0:
            raise TransferFailed(f"mooncake register_memory returned {rc}")
        self._registered[pages.address] = pages.nbytes

    def register(self, pages: KVPages) -> MemoryRegistration:
        self._ensure_registered(pages)
        return MemoryRegistration(
            self.name, self.session_id, pages.address, pages.num_pages, pages.page_size, device=pages.device
        )

    def deregister(self, registration: MemoryRegistration) -> None:
        if self._registered.pop(registration.address, None) is not None:
            self._engine.unregister_memory(registration.address)

    def _write(
        self,
        src: KVPages,
        src_pages: Sequence[int],
        target: MemoryRegistration,
        dst_pages: Sequence[int],
        timeout: float,
    ) -> None:
        # The engine bounds its own TCP operations; a dead or restarted peer fails fast.
        self._ensure_registered(src)  # the engine only reads from registered memory
        runs = page_runs(src_pages, dst_pages)
        size = src.page_size
        rc = self._engine.batch_transfer_sync_write(
            target.peer,
            [src.address + s * size for s, _, _ in runs],
            [target.address + d * size for _, d, _ in runs],
            [n * size for _, _, n in runs],
        )
        if rc != 0:
            raise TransferFailed(f"mooncake batch_transfer_sync_write to {target.peer} returned {rc}")

    def close(self) -> None:
        for address in list(self._registered):
            self._engine.unregister_memory(address)
        self._registered.clear()
        self._engine = None  # the engine has no close(); dropping it stops its threads
