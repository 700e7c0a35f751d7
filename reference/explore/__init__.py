"""Systematic interleaving exploration (frontrun DPOR) of the lessons whose defect is a race.

One module per lesson holds its properties (`PROPERTIES`; `ON_REQUEST`: those run only
when named); `runner.py` explores one property against one variant; `cli.py` is
`python -m reference --explore`. README.md next to this file says what each property
claims and why.
"""

from __future__ import annotations

from reference.explore import (
    failed_resurrect,
    failure_records,
    late_kv_write,
    live_set_race,
    locked_sections,
    restart_recovery,
    stale_bootstrap,
    stale_tracker,
)
from reference.explore.property import Property

PROPERTIES: dict[str, tuple[Property, ...]] = {
    "failed-resurrect": failed_resurrect.PROPERTIES,
    "failure-records": failure_records.PROPERTIES,
    "late-kv-write": late_kv_write.PROPERTIES,
    "live-set-race": live_set_race.PROPERTIES,
    "restart-recovery": restart_recovery.PROPERTIES,
    "stale-bootstrap": stale_bootstrap.PROPERTIES,
    "stale-tracker": stale_tracker.PROPERTIES,
}
# Run only when named (`--explore --property ID`): never in the default run or a bare
# `--explore` (the upstream mutation's lock stage, `locked_sections.py`).
ON_REQUEST: dict[str, tuple[Property, ...]] = {"stale-bootstrap": locked_sections.PROPERTIES}
