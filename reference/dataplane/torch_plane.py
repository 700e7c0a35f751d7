"""The `torch` backend: KV pages held in torch tensors, on CUDA where there is a GPU.

sglang's KV pool is torch tensors; this backend keeps the pages in a uint8 tensor on
the chosen device, so a transfer is a device-to-host copy out of the writer's tensor,
the loopback wire of the `default` backend, and a host-to-device copy into the
receiver's tensor (synchronized before the receiver answers `OK`). It exercises CUDA
memory allocation and copies on a GPU machine, not a GPU-direct path: NCCL or CUDA IPC
would be the next step, and are not modelled here.
"""

from __future__ import annotations

from reference.dataplane.pages import KVPages, TensorPages, resolve_device
from reference.dataplane.zmq_plane import ZmqPlane


class TorchPlane(ZmqPlane):
    name = "torch"

    def __init__(self, device: str = "auto") -> None:
        self.device = resolve_device(device)
        super().__init__()

    def allocate(self, num_pages: int, page_size: int) -> KVPages:
        return TensorPages(num_pages, page_size, self.device)
