"""Systematic interleaving exploration (frontrun DPOR) of the lessons whose defect is a race.

One module per lesson holds its properties (`PROPERTIES`); `runner.py` explores one
property against one variant; `cli.py` is `python -m reference --explore`. README.md
next to this file says what each property claims and why.
"""

from __future__ import annotations

from reference.explore import live_set_race
from reference.explore.property import Property

PROPERTIES: dict[str, tuple[Property, ...]] = {
    "live-set-race": live_set_race.PROPERTIES,
}
