"""The named adapter configurations (reference/upstream/configs.py) run upstream's code.

`mla` and `staging` are settings upstream's own server runs (an MLA model; the decode's
staging ring, `SGLANG_DISAGG_STAGING_BUFFER=1`). Measured here, with a line tracer on
every thread: the checks that run in a configuration execute the upstream lines that
configuration gates (the MLA branch of `_setup_bootstrap_infos`; the staging branches of
`_register_kv_args` and `send_metadata`, upstream's STAGING_REQ handler and its request
teardown), and the default configuration, upstream's defaults, executes none of the gated lines.
Our forms offer no configuration: the checks are not run there, and a run of one says so.
Each check gives `bug`, with its own symptom, on upstream mutants of the code it gates
(made as `reference/upstream/mutate.py` makes them, from the 0.5.19 wheel).
"""

from __future__ import annotations

import pytest
from upstream_trace import traced
from upstream_wheels import wheel

import reference.fixed
from reference.harness.lesson import Options, run_check, run_lesson
from reference.lessons import LESSONS
from reference.upstream import load_sglang
from reference.variants import Variant

pytestmark = pytest.mark.upstream

LESSON = LESSONS["stale-bootstrap"]
# release -> per configuration, (file, line, its text) of the upstream code its check must
# run: the branch the configuration gates, and (`UNGATED`) a line beside it that every
# run executes but only a configured check reads the result of
GATED = {
    "0.5.19": {
        "mla": [("common/conn.py", 1443, 'bootstrap_info["is_dummy"] = not bool(')],
        "staging": [
            ("mooncake/conn.py", 2495, "_alloc = self.kv_mgr._staging_ctx.allocator"),
            ("mooncake/conn.py", 2559, "self.chunk_staging_infos = []"),
            ("mooncake/conn.py", 2564, "self.kv_mgr.register_staging_room_bootstrap("),
        ],
    },
    "0.5.23": {
        "mla": [("common/conn.py", 2637, 'bootstrap_info["is_dummy"] = not bool(')],
        "staging": [
            ("common/conn.py", 2858, "self.chunk_staging_infos = []"),
            ("common/conn.py", 2863, "self.kv_mgr.register_staging_room_bootstrap("),
        ],
    },
}
UNGATED = {("mooncake/conn.py", 2559), ("common/conn.py", 2858)}  # chunk_staging_infos = []
CHECK_OF = {"mla": "mla-one-rank-asked", "staging": "staging-released"}
HANDLERS = (
    "handle_staging_req",
    "DecodeStagingHandler.unregister_decode_req",
    "DecodeStagingHandler.release_room",
)


def _variant(version: str):
    return load_sglang(str(wheel(version)))


def _source_line(version: str, path: str, line: int) -> str:
    import zipfile

    with zipfile.ZipFile(wheel(version)) as whl:
        text = whl.read(f"sglang/srt/disaggregation/{path}").decode()
    return text.splitlines()[line - 1].strip()


@pytest.mark.parametrize("version", sorted(GATED))
def test_the_gated_lines_are_upstreams(version):
    for gated in GATED[version].values():
        for path, line, text in gated:
            assert _source_line(version, path, line) == text, (path, line)


@pytest.mark.parametrize("version", sorted(GATED))
@pytest.mark.parametrize("name", ["mla", "staging"])
def test_a_configuration_runs_the_code_it_gates(version, name):
    variant = _variant(version)
    assert name in variant.module.CONFIGURATIONS
    prefix = f"<sglang-{version}>/sglang/srt/disaggregation/"
    with traced(prefix) as (lines, called):
        result = run_check(LESSON, LESSON.check(CHECK_OF[name]), variant, Options())
    assert result.verdict == "ok", result.symptom
    assert result.symptom.startswith(f"configuration {name}:"), result.symptom
    missing = [(p, n) for p, n, _ in GATED[version][name] if (p, n) not in lines]
    assert not missing, f"{name}: upstream lines never executed: {missing}"
    if name == "staging":
        assert all(any(q.endswith(h) for q in called) for h in HANDLERS), sorted(called)


@pytest.mark.parametrize("version", sorted(GATED))
def test_the_default_configuration_runs_none_of_it(version):
    """Upstream's defaults: the story and the default checks never reach the gated lines."""
    variant = _variant(version)
    prefix = f"<sglang-{version}>/sglang/srt/disaggregation/"
    with traced(prefix) as (lines, _called):
        for check in LESSON.checklist("mock"):
            if not check.configuration and not check.deep:
                run_check(LESSON, check, variant, Options(quick=True))
    gated = [(p, n) for by_name in GATED[version].values() for p, n, _ in by_name if (p, n) not in UNGATED]
    assert not [g for g in gated if g in lines], "a default run executed a gated line"


def test_staging_is_offered_from_0_5_19_only():
    assert "staging" not in _variant("0.5.18").module.CONFIGURATIONS
    assert set(_variant("0.5.19").module.CONFIGURATIONS) == {"mla", "staging"}


def test_our_forms_run_no_configured_check():
    fixed = Variant("fixed", reference.fixed, "ok")
    result = run_lesson(LESSON, fixed, Options(quick=True))
    assert not {c.id for c in result.checks} & set(CHECK_OF.values())
    alone = run_check(LESSON, LESSON.check("staging-released"), fixed, Options())
    assert alone.verdict == "unknown" and "offers no configuration 'staging'" in alone.symptom


# Upstream's own mutants (reference/upstream/mutate.py) each configured check tells apart
# on 0.5.19, with the symptom it names: (target, line, operator, check, symptom part).
MUTANTS = [
    (
        "CommonKVReceiver._setup_bootstrap_infos",
        1444,
        "Eq -> NotEq",
        "mla-one-rank-asked",
        "asked for pages: ",
    ),
    ("MooncakeKVReceiver.send_metadata", 2564, "delete a statement", "staging-released", "0 STAGING_RSP"),
    ("MooncakeKVReceiver.send_metadata", 2559, "delete a statement", "staging-released", "AttributeError"),
    ("MooncakeKVReceiver._register_kv_args", 2493, "IsNot -> Is", "staging-released", "did not name"),
]


@pytest.mark.parametrize(("target", "line", "operator", "check_id", "symptom"), MUTANTS)
def test_a_configured_check_tells_upstreams_mutant_apart(tmp_path, target, line, operator, check_id, symptom):
    from reference.upstream.mutate import all_mutants
    from reference.upstream.trees import DISAGG, make_tree

    release = wheel("0.5.19")
    (mutant,) = [
        m for m in all_mutants(release) if (m.target, m.line, m.operator) == (target, line, operator)
    ]
    tree = make_tree(release, tmp_path / "tree")
    (tree / DISAGG / mutant.file).write_text(mutant.text, encoding="utf-8")
    result = run_check(LESSON, LESSON.check(check_id), load_sglang(str(tree)), Options())
    assert result.verdict == "bug" and symptom in result.symptom, result.symptom
