"""One DP encoder worker process (upstream: a spawned per-GPU encoder process).

    python -m reference.transport.dp_worker RANK DISPATCH_ENDPOINT RESULT_ENDPOINT [SENTINEL_FD]

It connects a PULL socket to its rank's dispatch endpoint and a PUSH socket to the
dispatcher's shared result endpoint, says it is ready, then answers each request with
`answer()`. A `stall` message makes it keep taking requests without answering (a
wedged encoder); `stop` ends it. It also exits when its parent goes away, so a crashed
test never leaves it behind.
"""

from __future__ import annotations

import os
import sys

import zmq

from reference.transport.dp_base import answer

POLL_MS = 500  # how often an idle worker checks that its parent is still there


def serve(rank: int, dispatch_endpoint: str, result_endpoint: str) -> None:
    ctx = zmq.Context()
    inbox = ctx.socket(zmq.PULL)
    outbox = ctx.socket(zmq.PUSH)
    try:
        inbox.connect(dispatch_endpoint)
        outbox.connect(result_endpoint)
        outbox.send_json({"kind": "ready", "rank": rank})
        _serve_requests(rank, inbox, outbox)
    finally:
        inbox.close(linger=0)
        outbox.close(linger=1000)
        ctx.term()


def _serve_requests(rank: int, inbox: zmq.Socket, outbox: zmq.Socket) -> None:
    parent = os.getppid()
    stalled = False
    while os.getppid() == parent:
        if not inbox.poll(POLL_MS):
            continue
        request = inbox.recv_json()
        if not isinstance(request, dict):
            continue
        kind = request.get("kind")
        if kind == "stop":
            return
        if kind == "stall":
            stalled = True
        elif not stalled:
            reply = answer(rank, request)
            if reply is not None:
                outbox.send_json(reply)


if __name__ == "__main__":
    # The sentinel fd is only held open (the parent watches its other end); never used.
    serve(int(sys.argv[1]), sys.argv[2], sys.argv[3])
