"""The guard: removes one run's namespaces when that run ends, however it ends.

`python -m reference.netns.guard PREFIX` is started by the first topology of a
process, with a pipe on its stdin whose only write end that process holds. It forks
once and its parent exits at once: the guard itself is nobody's child (a kill of the
run's process tree or group spares it, and a run's own leftover checks do not see it).
When the pipe reaches EOF (the owner exited, cleanly or by SIGKILL), the guard kills
every process left in a namespace named PREFIX* and deletes those namespaces, then exits.
"""

from __future__ import annotations

import os
import signal
import sys

from reference.netns import ns


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].startswith(ns.SUITE):
        print(f"usage: python -m reference.netns.guard {ns.SUITE}<pid>-", file=sys.stderr)
        return 2
    if os.fork() != 0:
        os._exit(0)  # the starter reaps this parent; the guard lives on, re-parented
    os.setsid()  # its own session: a ^C or a group kill of the run spares it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stdin.buffer.read()
    ns.sweep(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
