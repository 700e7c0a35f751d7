"""Every explored property holds on one variant: `pytest --impl MODULE` (default reference.fixed).

One test per property the upstream fixes claim; each explores every interleaving of its
threads up to its preemption bound in a child process (`python -m reference --explore`).
A failure prints the counterexample: the replay command and the two-lane trace.
"""

import pytest
from explore_run import explore_json

from reference.explore import PROPERTIES

CLAIMED = [
    pytest.param(p.lesson, p.id, marks=pytest.mark.lesson(id=p.lesson), id=f"{p.lesson}/{p.id}")
    for props in PROPERTIES.values()
    for p in props
    if p.claimed
]


@pytest.mark.parametrize(("lesson", "prop"), CLAIMED)
def test_property_holds(explore_variant, lesson, prop):
    (finding,) = explore_json("--impl", explore_variant.name, "--lesson", lesson, "--property", prop)
    if finding["verdict"] != "ok":
        trace = f"\n  schedule: {finding['schedule']}\n{finding['trace']}" if finding["schedule"] else ""
        verdict = f"{finding['verdict']}: {finding['symptom']}"
        pytest.fail(f"{lesson}/{prop} on {explore_variant.name}: {verdict}{trace}", pytrace=False)
    assert finding["interleavings"] > 0
