"""How components reach each other: in-process (`mock`) or real sockets (`loopback`)."""
