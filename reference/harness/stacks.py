"""Where a worker was stuck, from faulthandler's dump of all its threads.

faulthandler writes one block per thread, innermost frame first:

    Current thread 0x00007f... (most recent call first):
      File "/path/to/module.py", line 12 in update_status

`stuck_at` names one frame for the one-line symptom: the innermost frame that is the
variant's or the scenario's own code (not the standard library, not this harness), on
the thread whose innermost such frame lies outside the `reference` package (a user's
module) if there is one, else on the thread that received the dump signal (the main
thread). The whole dump stays in the result's details.
"""

from __future__ import annotations

import os
import re
import sysconfig
from pathlib import Path

FRAME = re.compile(r'^\s+File "(?P<file>.*)", line (?P<line>\d+) in (?P<func>.*)$')
STDLIB = tuple(
    str(Path(p).resolve()) for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
)
PACKAGE = Path(__file__).resolve().parents[1]  # reference/
HARNESS = PACKAGE / "harness"


def threads(dump: str) -> list[tuple[str, list[tuple[str, int, str]]]]:
    """[(header, [(file, line, function), ...innermost first]), ...] in dump order."""
    found: list[tuple[str, list[tuple[str, int, str]]]] = []
    for text in dump.splitlines():
        if text.startswith(("Thread 0x", "Current thread 0x")):
            found.append((text, []))
        elif found and (match := FRAME.match(text)):
            found[-1][1].append((match["file"], int(match["line"]), match["func"]))
    return found


def stuck_at(dump: str) -> str:
    """'main thread at tests/x.py:12 in update_status', or "" when nothing matches."""
    candidates = []
    for header, frames in threads(dump):
        own = [frame for frame in frames if _own_code(frame[0])]
        if own:
            who = "main thread" if header.startswith("Current thread") else "a thread"
            candidates.append((who, own[0]))
    outside = [c for c in candidates if not _inside(Path(c[1][0]).resolve(), PACKAGE)]
    chosen = outside or [c for c in candidates if c[0] == "main thread"] or candidates
    if not chosen:
        return ""
    who, (file, line, func) = chosen[0]
    return f"{who} at {_short(file)}:{line} in {func}"


def _own_code(file: str) -> bool:
    path = Path(file).resolve()
    return not (str(path).startswith(STDLIB) or _inside(path, HARNESS) or "site-packages" in path.parts)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _short(file: str) -> str:
    """Relative to the current directory when it is under it."""
    cwd = Path(os.getcwd()).resolve()
    path = Path(file).resolve()
    return str(path.relative_to(cwd)) if _inside(path, cwd) else file
