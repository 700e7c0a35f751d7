"""KV data plane: how a prefill rank's KV pages reach a decode rank's buffer.

The control plane (bootstrap server, receivers, status) decides where to send; the
data plane moves the bytes. Backends: `default` (memcpy on the mock transport, bytes
over ZMQ on loopback), `mooncake`, `nixl` and `torch`. See `base.py` for the contract
and `discovery.py` for which are usable here; `python -m reference.dataplane` prints it.
`memory.py` and `writers.py` are the control plane's transfer step (`KVMemory`,
`KVWriter`), and
`adapters.py` runs that step over a real backend (`--backend NAME`).
"""

from reference.dataplane.base import BackendUnavailable, DataPlane, MemoryRegistration, WriteResult
from reference.dataplane.discovery import (
    BACKENDS,
    BackendStatus,
    available_backends,
    backend_status,
    open_plane,
)
from reference.dataplane.memory import KVMemory
from reference.dataplane.pages import KVPages
from reference.dataplane.writers import KVWriter, MemcpyWriter, ZmqBytesWriter

__all__ = [
    "BACKENDS",
    "BackendStatus",
    "BackendUnavailable",
    "DataPlane",
    "KVMemory",
    "KVPages",
    "KVWriter",
    "MemcpyWriter",
    "MemoryRegistration",
    "WriteResult",
    "ZmqBytesWriter",
    "available_backends",
    "backend_status",
    "open_plane",
]
