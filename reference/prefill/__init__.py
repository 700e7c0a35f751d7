"""A simulated prefill instance: N ranks behind one bootstrap server, restartable.

`rank.PrefillRank` is what one rank does with decode messages, with no transport;
`mock.MockPrefill` runs it in-process on a `MockNetwork`; `loopback.LoopbackPrefill`
runs it in its own OS process (`process.py`) on real sockets, so a restart is a real
new process with new ports behind the same bootstrap address.
"""
