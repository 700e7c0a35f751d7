"""Every explored property holds on one variant: `pytest --impl MODULE` (default reference.fixed).

One test per property the upstream fixes claim; the first test a pytest worker runs
explores them all in one child process (`python -m reference --explore --json`), or in
this process when pytest runs under frontrun (as `ci/mutation.sh` runs it), and each test
reads its own finding.
A failure prints the counterexample: the replay command and the two-lane trace.
"""

import pytest
from explore_run import explore_json

from reference.explore import PROPERTIES
from reference.explore.runner import explore, frontrun_active
from reference.harness.pytest_plugin import EXPLORE_DEFAULT
from reference.harness.specs import VariantSpec
from reference.variants import RESIDUAL_LESSON_IDS

CLAIMED = [
    pytest.param(p.lesson, p.id, marks=pytest.mark.lesson(id=p.lesson), id=f"{p.lesson}/{p.id}")
    for props in PROPERTIES.values()
    for p in props
    if p.claimed
]


def lesson_prop(lesson: str, prop_id: str):
    (found,) = [p for p in PROPERTIES[lesson] if p.id == prop_id]
    return found


_RUNS: dict[tuple[str, float | None], dict[tuple[str, str], dict]] = {}


def _findings(name: str, timeout: float | None) -> dict[tuple[str, str], dict]:
    """Every claimed property explored on `name`, in one child process per pytest worker."""
    if (name, timeout) not in _RUNS and frontrun_active():  # under `frontrun pytest` (ci/mutation.sh)
        variant = VariantSpec("impl", name).load()
        found = [explore(p, variant).to_json() for props in PROPERTIES.values() for p in props if p.claimed]
        _RUNS[name, timeout] = {(f["lesson"], f["property"]): f for f in found}
    if (name, timeout) not in _RUNS:
        bound = ("--timeout", str(timeout)) if timeout else ()
        props = [a for param in CLAIMED for a in ("--property", param.values[1])]
        found = explore_json("--impl", name, *props, *bound)
        _RUNS[name, timeout] = {(f["lesson"], f["property"]): f for f in found}
    return _RUNS[name, timeout]


@pytest.mark.parametrize(("lesson", "prop"), CLAIMED)
def test_property_holds(explore_variant, impl_timeout, lesson, prop):
    finding = _findings(explore_variant.name, impl_timeout)[lesson, prop]
    if explore_variant.name == EXPLORE_DEFAULT and lesson_prop(lesson, prop).hardened_only:
        pytest.skip(f"{lesson}/{prop} is hardened-only: not judged on the fixed form")
    if lesson in RESIDUAL_LESSON_IDS and explore_variant.name == EXPLORE_DEFAULT:
        # a residual lesson's property: upstream's fixed form leaves it open, hardened closes it
        assert finding["verdict"] == "bug", f"{lesson}/{prop} on the fixed form: {finding['symptom']}"
        return
    if finding["verdict"] != "ok":
        trace = f"\n  schedule: {finding['schedule']}\n{finding['trace']}" if finding["schedule"] else ""
        verdict = f"{finding['verdict']}: {finding['symptom']}"
        pytest.fail(f"{lesson}/{prop} on {explore_variant.name}: {verdict}{trace}", pytrace=False)
    assert finding["interleavings"] > 0
