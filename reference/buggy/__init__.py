"""One variant: the component classes under the names the scenarios use (README)."""

from .dispatcher import DPDispatcher
from .manager import KVManager

__all__ = ["DPDispatcher", "KVManager"]
