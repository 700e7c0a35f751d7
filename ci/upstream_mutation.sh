#!/usr/bin/env bash
# Mutation of upstream's own code (reference/upstream/mutate.py): every mutant of the
# methods the four PRs touched and their direct callers, as a source tree made from the
# 0.5.19 and 0.5.23 wheels, run through --sglang TREE on every lesson and check and
# compared verdict by verdict with the unmodified tree; writes
# reference/upstream/mutation/<release>.md (kill rate, every survivor with its reason)
# and .log (one line per mutant), and reference/upstream/MUTATION.md from them.
# About 7 s per mutant and job on an idle core (456 mutants); JOBS (default 2) at once.
# Not part of ci/test.sh.
# Usage: bash ci/upstream_mutation.sh [--resume] [RELEASE...]
#   --resume: keep the mutants each release's committed log has as detected, judge the rest
#             (valid while the checks only grew: a verdict that differed still differs)
#   MUTATION_SUMMARY_ONLY=1: rewrite the .md files and MUTATION.md from the logs, run nothing
#   MUTATION_DEEP=1: judge each survivor again with its lesson's default run (the simulation)
# Every survivor that removed a lock is judged again by the explorations that contend it
# (`--explore-locks`: mutate.py's EXPLORED_WITH, frontrun DPOR; needs the test extra's frontrun).
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${SGLANG_WHEELS:-.cache/sglang}"
resume=()
if [ "${1:-}" = "--resume" ]; then resume=(yes); shift; fi
releases=("$@")
[ "${#releases[@]}" -gt 0 ] || releases=(0.5.19 0.5.23)
out=reference/upstream/mutation
mutate=(.venv/bin/python -m reference.upstream.mutate)
[ -n "${MUTATION_SUMMARY_ONLY:-}" ] || bash ci/upstream.sh --fetch-only
mkdir -p "$out"
for release in "${releases[@]}"; do
  wheel=$(compgen -G "$cache/sglang-$release-*.whl" | head -n 1) ||
    { echo "ci/upstream_mutation.sh: no sglang-$release wheel in $cache" >&2; exit 2; }
  if [ -n "${MUTATION_SUMMARY_ONLY:-}" ]; then
    "${mutate[@]}" "$wheel" --from-log "$out/$release.log" --out "$out/$release.md" >/dev/null
    continue
  fi
  from=()
  if [ "${#resume[@]}" -gt 0 ]; then cp "$out/$release.log" "$out/$release.log.before"; from=(--resume "$out/$release.log.before"); fi
  deep=()
  [ -z "${MUTATION_DEEP:-}" ] || deep=(--deep)
  "${mutate[@]}" "$wheel" --jobs "${JOBS:-2}" "${from[@]}" "${deep[@]}" --explore-locks --out "$out/$release.md" --log "$out/$release.log" >/dev/null
  rm -f "$out/$release.log.before"
done
{ "${mutate[@]}" --header; for release in 0.5.19 0.5.23; do [ -f "$out/$release.md" ] && cat "$out/$release.md"; done; } \
  > reference/upstream/MUTATION.md
