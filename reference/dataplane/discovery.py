"""Which KV transfer backends this machine can use, and opening one by name.

Optional packages are imported only here, when asked, and only the one asked about:
`import reference` never pulls in Mooncake, NIXL or torch. A backend that cannot be
used says why in one line (module missing, shared library missing, no GPU), so a test
can skip with that reason and the CLI can report it.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

from reference.dataplane.base import BackendUnavailable, DataPlane
from reference.transport import IN_PROCESS, check_transport

BACKENDS = ("default", "mooncake", "nixl", "torch")

DEVICE_ENV = "REFERENCE_KV_DEVICE"  # memory for KV buffers when no device is given: cpu, cuda, auto


def default_device() -> str:
    """Where KV buffers live unless a caller says: `$REFERENCE_KV_DEVICE`, else host memory.

    The scenarios never pass a device, so this is how `ci/gpu-check.sh` runs a lesson's
    prefill and decode ranks on GPU memory without a flag on every layer in between.
    """
    return os.environ.get(DEVICE_ENV) or "cpu"


@dataclass(frozen=True)
class BackendStatus:
    name: str
    usable: bool
    reason: str = ""  # why it is not usable, one line; empty when usable
    detail: str = ""  # version and memory kinds, when usable


def _version(*distributions: str) -> str:
    for dist in distributions:
        try:
            return f"{dist} {metadata.version(dist)}"
        except metadata.PackageNotFoundError:
            continue
    return "version unknown"


def _probe_default() -> str:
    import zmq

    return f"pyzmq {zmq.__version__}; memcpy on mock, ZMQ on loopback"


def _probe_mooncake() -> str:
    # Importing mooncake.engine opens a socket in the importing process, so the probe
    # only checks the module and the shared library it needs; ranks import the engine.
    if importlib.util.find_spec("mooncake") is None:
        raise BackendUnavailable("module mooncake missing (pip install -c ci/constraints.txt '.[mooncake]')")
    try:
        ctypes.CDLL("libibverbs.so.1")
    except OSError:
        raise BackendUnavailable(
            "library missing: libibverbs.so.1 (Debian: apt-get install libibverbs1)"
        ) from None
    return _version("mooncake-transfer-engine-non-cuda", "mooncake-transfer-engine") + "; tcp, P2PHANDSHAKE"


def _probe_nixl() -> str:
    from reference.dataplane.nixl_plane import load_api

    if importlib.util.find_spec("nixl_cu12") is None and importlib.util.find_spec("nixl") is None:
        raise BackendUnavailable("module nixl missing (pip install -c ci/constraints.txt '.[nixl]')")
    load_api()
    return _version("nixl-cu12", "nixl") + "; UCX agent"


def _probe_torch() -> str:
    if importlib.util.find_spec("torch") is None:
        raise BackendUnavailable("module torch missing (pip install -c ci/constraints.txt '.[torch]')")
    import torch

    gpu = (
        f"CUDA: {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else "no CUDA GPU: CPU tensors"
    )
    return f"torch {torch.__version__}; {gpu}"


PROBES: dict[str, Callable[[], str]] = {
    "default": _probe_default,
    "mooncake": _probe_mooncake,
    "nixl": _probe_nixl,
    "torch": _probe_torch,
}


def backend_status(name: str) -> BackendStatus:
    if name not in PROBES:
        return BackendStatus(name, False, f"unknown backend {name!r} (choose from {', '.join(BACKENDS)})")
    try:
        return BackendStatus(name, True, detail=PROBES[name]())
    except BackendUnavailable as exc:
        return BackendStatus(name, False, str(exc))
    except Exception as exc:  # a broken install must read as a reason, not a traceback
        return BackendStatus(
            name, False, f"{name} failed to load: {type(exc).__name__}: {exc}".splitlines()[0]
        )


def available_backends() -> dict[str, BackendStatus]:
    """Every known backend, usable or not, with the reason when not."""
    return {name: backend_status(name) for name in BACKENDS}


def open_plane(name: str, *, transport: str = "loopback", device: str | None = None) -> DataPlane:
    """A plane of backend `name`; raises `BackendUnavailable` with the one-line reason."""
    device = device or default_device()
    status = backend_status(name)
    if not status.usable:
        raise BackendUnavailable(status.reason)
    check_transport(transport)
    in_process = transport in IN_PROCESS
    if name != "default" and in_process:
        raise BackendUnavailable(f"backend {name} moves bytes between processes: use --transport loopback")
    if name == "default":
        from reference.dataplane.local import LocalPlane
        from reference.dataplane.zmq_plane import ZmqPlane

        return LocalPlane() if in_process else ZmqPlane()
    if name == "mooncake":
        from reference.dataplane.mooncake_plane import MooncakePlane

        return MooncakePlane(device)
    if name == "nixl":
        from reference.dataplane.nixl_plane import NixlPlane

        return NixlPlane(device)
    from reference.dataplane.torch_plane import TorchPlane

    return TorchPlane(device)
