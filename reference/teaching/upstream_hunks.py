"""Upstream's own hunk of a fix: the methods its PR touched, read from two sglang wheels.

The release before the fix and the first with it (reference/upstream/VERSIONS.md) are read in
place from `$SGLANG_WHEELS`, else `.cache/sglang/`; each touched method is found by class name
across `sglang/srt/disaggregation/**.py` with `ast`, and each one that changed is shown as a
unified diff. Nothing is imported or copied; without the wheels, one line says how to fetch them.

Release against release also shows what other PRs changed in the same methods between the
two releases. `OTHERS` names those lines (per lesson and method, as the releases write them,
stripped); they are applied to the older side before diffing, so the diff shows the PR's
change alone, the newer side's line numbers stay the release's, and a note under the method
says how many lines were left out (`tests/test_teaching_upstream_hunks.py` checks that each
named line is a changed line of the release diff, so the list cannot go stale quietly).
"""

from __future__ import annotations

import ast
import difflib
import functools
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from reference.teaching.diffs import _html_row

PR = "https://github.com/sgl-project/sglang/pull/"
DISAGG = "sglang/srt/disaggregation/"


@dataclass(frozen=True)
class Fix:
    pr: str
    before: str  # the last release without the fix
    after: str  # the first release with it
    touched: str  # "Class.method ...", as tests/test_upstream_traced.py lists them


_STALE = (
    "CommonKVReceiver.__init__ CommonKVReceiver._setup_bootstrap_infos "
    "CommonKVReceiver._check_waiting_timeout CommonKVReceiver.invalidate_cached_bootstrap_infos "
    "MooncakeKVReceiver._register_kv_args MooncakeKVReceiver.send_metadata"
)
_TASKS = (
    "CommonKVBootstrapServer.__init__ CommonKVBootstrapServer._run_server "
    "DPDispatcher.__init__ DPDispatcher.start"
)
FIXES = {
    "failed-resurrect": Fix("24539", "0.5.11", "0.5.12", "CommonKVManager.update_status"),
    "live-set-race": Fix("36351", "0.5.18", "0.5.19", "CommonKVManager._handle_node_failure"),
    "stale-bootstrap": Fix("36029", "0.5.18", "0.5.19", _STALE),
    "task-refs": Fix("33048", "0.5.18", "0.5.19", _TASKS),
}


# Lines other PRs changed in a touched method between the two releases (stripped).
OTHERS: dict[str, dict[str, tuple[str, ...]]] = {
    "failed-resurrect": {  # 0.5.12 moved the prefill-side cleanup into CommonKVSender.clear()
        "CommonKVManager.update_status": (
            "if (",
            "status == KVPoll.Failed",
            "and self.disaggregation_mode == DisaggregationMode.PREFILL",
            'and hasattr(self, "req_to_decode_prefix_len")',
            "):",
            "self.req_to_decode_prefix_len.pop(bootstrap_room, None)",
        ),
    },
    "stale-bootstrap": {  # the staging-slot layer ids of the same release
        "MooncakeKVReceiver._register_kv_args": (
            'staging_slots = getattr(self.kv_mgr, "kv_buffer_tensors", None) or {}',
            'packed_staging_slot_layer_ids = b"".join(',
            'struct.pack("Q", layer_id)',
            'for layer_id in (staging_slots.get("slot_layer_ids") or [])',
            ")",
            "packed_staging_slot_layer_ids,",
        ),
    },
    "task-refs": {  # the dispatcher's metadata waits, and a comment about them
        "DPDispatcher.__init__": (
            '# Key = req_id for encode/broadcast, req_id + "_send" for mooncake /send.',
            "# Key = req_id for encode/broadcast, or a per-control-request key for",
            "# Mooncake metadata waits, sends, and destination registrations.",
            "self._mapping_condition = asyncio.Condition()",
            "self._metadata_counter = 0",
        ),
    },
}


def without_others(a: list[str], b: list[str], others: tuple[str, ...]) -> tuple[list[str], int]:
    """`a` with the changes of `b` whose lines are all in `others` applied, and how many lines
    that left out of the diff: diffing the result against `b` shows the rest alone."""
    out: list[str] = []
    left_out = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out += a[i1:i2]
            continue
        removed, added = a[i1:i2], b[j1:j2]
        out += [line for line in removed if line.strip() not in others]  # still shown as removed
        out += [line for line in added if line.strip() in others]  # another PR's: applied
        left_out += sum(line.strip() in others for line in (*removed, *added))
    return out, left_out


@dataclass(frozen=True)
class UpstreamHunks:
    """Prints as a header (PR, both releases, files) and one unified diff per changed method."""

    lines: tuple[str, ...]

    def __repr__(self) -> str:
        return "\n".join(self.lines)

    def _repr_html_(self) -> str:
        return f'<pre style="font-size:12px;line-height:1.35">{"".join(map(_html_row, self.lines))}</pre>'


def _wheel(version: str) -> Path | None:
    where = Path(os.environ.get("SGLANG_WHEELS", Path(__file__).resolve().parents[2] / ".cache/sglang"))
    return next(iter(sorted(where.glob(f"sglang-{version}-*.whl"))), None)


@functools.lru_cache(maxsize=8)
def _methods(wheel: Path, wanted: tuple[str, ...]) -> dict[str, tuple[str, int, list[str]]]:
    """`Class.method` -> (file, first line, source lines) for each one the wheel has."""
    found: dict[str, tuple[str, int, list[str]]] = {}
    release = "-".join(wheel.name.split("-")[:2])  # sglang-0.5.18
    classes = {f"class {key.split('.')[0]}" for key in wanted}
    with zipfile.ZipFile(wheel) as archive:
        names = sorted(n for n in archive.namelist() if n.startswith(DISAGG) and n.endswith(".py"))
        texts = {name: archive.read(name).decode("utf-8") for name in names}
    for name, text in ((n, t) for n, t in texts.items() if any(c in t for c in classes)):
        lines = text.splitlines()
        for cls in (node for node in ast.parse(text).body if isinstance(node, ast.ClassDef)):
            for fn in cls.body:
                key = f"{cls.name}.{getattr(fn, 'name', '')}"
                if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and key in wanted:
                    start = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
                    found.setdefault(key, (f"{release}/{name}", start, lines[start - 1 : fn.end_lineno]))
    return found


def _shift(header: str, old: int, new: int) -> str:
    """Move a hunk header's line numbers from the method's to the file's."""
    bases = iter((old, new))
    return re.sub(r"([-+])(\d+)", lambda m: f"{m.group(1)}{int(m.group(2)) + next(bases)}", header, count=2)


def upstream_hunks(lesson: str, context: int = 3) -> UpstreamHunks:
    """Upstream's diff of the methods `lesson`'s fix touched, or one line on fetching the wheels."""
    if lesson not in FIXES:
        raise ValueError(f"no upstream fix for lesson {lesson!r}; choose from {', '.join(FIXES)}")
    fix, link = FIXES[lesson], PR + FIXES[lesson].pr
    wheels = [_wheel(fix.before), _wheel(fix.after)]
    if None in wheels:
        need = f"sglang {fix.before} and {fix.after} wheels (fetch: bash ci/upstream.sh --fetch-only)"
        return UpstreamHunks((f"Upstream's hunk needs the {need}; the fix: {link}",))
    old, new = (_methods(w, tuple(fix.touched.split())) for w in wheels if w is not None)
    files = sorted({where[0] for where in (*old.values(), *new.values())})
    out = [
        f"Upstream's fix {link}: sglang {fix.before} -> {fix.after}",
        f"(https://pypi.org/project/sglang/{fix.before}/, https://pypi.org/project/sglang/{fix.after}/),",
        "each method the PR touched, release against release, other PRs' changes left out:",
        *(f"  {name}" for name in files),
    ]
    for key in fix.touched.split():
        (a_file, a_at, a), (b_file, b_at, b) = (side.get(key, ("/dev/null", 1, [])) for side in (old, new))
        a, left_out = without_others(a, b, OTHERS.get(lesson, {}).get(key, ()))
        body = list(difflib.unified_diff(a, b, n=context, lineterm=""))[2:]
        if not body:
            continue
        out += [f"--- {a_file} {key}", f"+++ {b_file} {key}"]
        if left_out:
            out.append(
                f"(left out: {left_out} lines of another change in {fix.after}; the old side's"
                f" line numbers count them as applied)"
            )
        out += [_shift(line, a_at - 1, b_at - 1) if line.startswith("@@") else line for line in body]
    return UpstreamHunks(tuple(out))
