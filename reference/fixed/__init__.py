"""One variant: the component classes under the names the scenarios use (README)."""

from .manager import KVManager

__all__ = ["KVManager"]
