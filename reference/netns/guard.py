"""The guard: removes one run's namespaces when that run ends, however it ends.

`python -m reference.netns.guard PREFIX` is started (in its own session, so a kill of
the run's process group spares it) by the first topology of a process, with a pipe
on its stdin whose only write end that process holds. When the pipe reaches EOF (the
owner exited, cleanly or by SIGKILL), the guard kills every process left in a
namespace named PREFIX* and deletes those namespaces, then exits.
"""

from __future__ import annotations

import signal
import sys

from reference.netns import ns


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].startswith(ns.SUITE):
        print(f"usage: python -m reference.netns.guard {ns.SUITE}<pid>-", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C to the terminal ends the run, not us
    sys.stdin.buffer.read()
    ns.sweep(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
