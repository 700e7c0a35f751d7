"""Lesson `stale-bootstrap` with its KV bytes moved by each real backend, on loopback.

The prefill is its own OS process writing with the backend; the decode's KV buffer is
registered by a decode rank process; a restart gives the prefill new ports and an
empty table of decode registrations. Buggy: nothing succeeds again. Fixed: one
failure, then the decode re-registers and every page lands, checked byte for byte.
`--backend NAME` narrows the run; absent backends are skipped with their reason.
"""

import pytest

from reference.lessons import LESSONS, Options, run_lesson
from reference.lessons.stale_bootstrap.scenario import AFTER, BEFORE
from reference.variants import shipped

pytestmark = [pytest.mark.lesson(id="stale-bootstrap"), pytest.mark.loopback]


# Two lessons, each starting prefill processes that import the backend (torch alone is
# ~10 s of CPU per process): ~20 s on a quiet machine, over the 60 s default at load 7.
@pytest.mark.timeout(180)
def test_stale_bootstrap_over_a_real_backend(backend):
    if backend == "default":
        pytest.skip("default: the loopback lesson tests cover the KV-frames data plane")
    options = Options(transport="loopback", backend=backend)
    buggy = run_lesson(LESSONS["stale-bootstrap"], shipped("buggy"), options)
    fixed = run_lesson(LESSONS["stale-bootstrap"], shipped("fixed"), options)
    assert buggy.verdict == "bug", buggy.symptom
    assert buggy.details["successes_after"] == 0 and buggy.details["bytes_verified"] == BEFORE
    assert fixed.verdict == "ok", fixed.symptom
    assert fixed.details["bytes_verified"] == BEFORE + AFTER - 1
    assert fixed.details["kv_frames"] == 0, "pages came as KV frames, not through the backend"
    assert f"written by {backend} (checksums match)" in fixed.symptom
    assert fixed.to_json()["backend"] == backend
