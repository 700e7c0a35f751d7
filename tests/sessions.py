"""Processes of a session: a test starts a CLI with `start_new_session=True` (its pid is
the session id), then finds and stops everything it left, whatever process group or
parent each has by then (an orphan is re-parented, but keeps its session)."""

from __future__ import annotations

import os
import signal

import psutil


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes in session `sid`."""
    found = []
    for pid in psutil.pids():
        try:
            if os.getsid(pid) == sid and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                found.append(pid)
        except (OSError, psutil.Error):
            continue
    return found


def kill_session(sid: int) -> list[int]:
    """SIGKILL every live process of session `sid`; returns the pids that were alive."""
    left = session_members(sid)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
    return left
