"""One variant: the component classes under the names the scenarios use (README)."""

from .bootstrap_server import BootstrapServer
from .dispatcher import DPDispatcher
from .manager import KVManager
from .receiver import KVReceiver

__all__ = ["BootstrapServer", "DPDispatcher", "KVManager", "KVReceiver"]
