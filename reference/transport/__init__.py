"""How components reach each other: in-process (`mock`) or real sockets (`loopback`).

`TRANSPORTS` is the one list of transport names; `kits.py` is the one place a name
becomes objects.
"""

TRANSPORTS = ("mock", "loopback")
