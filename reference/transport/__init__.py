"""How components reach each other: in-process (`mock`) or real sockets (`loopback`).

`TRANSPORTS` is the one list of transport names; `kits.py` is the one place a name
becomes objects.
"""

TRANSPORTS = ("mock", "loopback")
IN_PROCESS = frozenset({"mock"})  # every rank in this process: no bytes cross processes


def check_transport(name: str) -> None:
    """A one-line ValueError naming the choices for an unknown transport name."""
    if name not in TRANSPORTS:
        raise ValueError(f"unknown transport {name!r} (choose from {', '.join(TRANSPORTS)})")
