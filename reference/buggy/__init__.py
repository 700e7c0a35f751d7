"""One variant: the component classes under the names the scenarios use (README)."""

from .bootstrap_server import BootstrapServer
from .manager import KVManager
from .receiver import KVReceiver

__all__ = ["BootstrapServer", "KVManager", "KVReceiver"]
