"""A small fixed sample of mutants, judged in every CI run (the full run: ci/mutation.sh).

Each is a mutation of the kind mutmut makes (an operator, an argument, a name swapped)
in `reference/fixed/`, applied to a copy of the fixed package and judged as mutmut's
test command judges it: the lesson gives `bug`. The sample covers every fixed module
(reference/explore/MUTATION.md has the full run's kill rate and survivors).
"""

import pytest

from reference.explore.reverts import FIXED, build_variant
from reference.lessons import LESSONS, Options, run_lesson

# (module, code as in reference/fixed, the mutant's code, the lesson that must kill it)
SAMPLE = [
    ("manager.py", "status == KVPoll.Failed:  # FIX", "status == KVPoll.Success:  # FIX", "failed-resurrect"),
    ("manager.py", "self._fail_lost_room(room, addr)", "self._fail_lost_room(None, addr)", "live-set-race"),
    ("receiver.py", ".get(key) is infos:", ".get(key) is not infos:", "stale-bootstrap"),
    ("receiver.py", "in self._connection_pool_entries.items():", "in {}.items():", "stale-bootstrap"),
    ("dispatcher.py", "self.background_tasks.add(task)", "self.background_tasks.add(None)", "task-refs"),
    (
        "bootstrap_server.py",
        "self._background_tasks.add(task)",
        "self._background_tasks.add(None)",
        "task-refs",
    ),
]


@pytest.mark.parametrize(
    ("index", "module", "code", "mutant", "lesson"),
    [(i, *row) for i, row in enumerate(SAMPLE)],
    ids=[f"{m}:{c}" for m, c, _, _ in SAMPLE],
)
def test_mutant_is_killed(tmp_path, index, module, code, mutant, lesson):
    source = (FIXED / module).read_text()
    assert source.count(code) == 1, (
        f"{code!r} is no longer once in reference/fixed/{module}: update the sample"
    )
    name = f"mutant_{index}"  # one package name per mutant: a loaded package stays in sys.modules
    variant = build_variant(mutant, name, module, source.replace(code, mutant), tmp_path)
    result = run_lesson(LESSONS[lesson], variant, Options())
    assert result.verdict == "bug", f"survived: {result.verdict}: {result.symptom}"
