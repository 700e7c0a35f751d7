"""The `torch` backend: KV pages held in torch tensors, on CUDA where there is a GPU.

sglang's KV pool is torch tensors; this backend keeps the pages in a uint8 tensor on
the chosen device, so a transfer is a device-to-host copy out of the writer's tensor,
the loopback wire of the `default` backend, and a host-to-device copy into the
receiver's tensor (synchronized before the receiver answers `OK`). It exercises CUDA
memory allocation and copies on a GPU machine, not a GPU-direct path: NCCL or CUDA IPC
would be the next step, and are not modelled here.
"""

from __future__ import annotations

from reference.dataplane.base import BackendUnavailable
from reference.dataplane.memory import KVPages, TensorPages
from reference.dataplane.zmq_plane import ZmqPlane


def resolve_device(device: str) -> str:
    """`auto` is CUDA when torch sees a GPU, else CPU; an explicit CUDA device must exist."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise BackendUnavailable(f"device {device} asked for, but torch {torch.__version__} sees no CUDA GPU")
    return device


class TorchPlane(ZmqPlane):
    name = "torch"

    def __init__(self, device: str = "auto") -> None:
        self.device = resolve_device(device)
        super().__init__()

    def allocate(self, num_pages: int, page_size: int) -> KVPages:
        return TensorPages(num_pages, page_size, self.device)
