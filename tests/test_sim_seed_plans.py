"""A seed names the same plans in any process: what else it imported does not change them.

Hypothesis mixes literals of the project's loaded modules into its draws; the search
turns that off (`search._no_local_constants`). Before, the plans of one seed differed
between pytest (whose plugin imports the upstream adapter) and the CLI, and a wrong fix
the simulation caught in one was `ok` in the other. Two interpreters run the same search,
one after importing the upstream adapter's modules: their plans must be the same.
"""

from __future__ import annotations

import subprocess
import sys

SEARCH = """
import hashlib, sys
if sys.argv[1] == "more":
    import reference.harness.isolation  # what pytest's plugin imports first
import reference.fixed
from reference.sim import search
from reference.sim.invariants import checked_by
from reference.sim.profiles import PROFILES
run_plan = search.run_plan
def recording(variant, plan, checking=None):
    print(hashlib.sha1(repr(plan.steps).encode()).hexdigest())
    return run_plan(variant, plan, checking)
search.run_plan = recording
search.search(reference.fixed, PROFILES["stale-bootstrap"], "upstream", 0, 3.0, checked_by("stale-bootstrap"))
"""


def _plans(imports: str) -> list[str]:
    run = subprocess.run(
        [sys.executable, "-c", SEARCH, imports], capture_output=True, text=True, timeout=120, check=True
    )
    return run.stdout.split()


def test_a_seed_runs_the_same_plans_whatever_else_the_process_imported():
    few, more = _plans("few"), _plans("more")
    assert len(few) >= 30
    assert few == more
