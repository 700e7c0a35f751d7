#!/usr/bin/env bash
# Mutation of upstream's own code (reference/upstream/mutate.py): every mutant of the
# methods the four PRs touched and their direct callers, as a source tree made from the
# 0.5.19 and 0.5.23 wheels, judged by its lesson through --sglang TREE; writes
# reference/upstream/mutation/<release>.md (kill rate, every survivor with its reason) and
# .log (one line per mutant), which reference/upstream/MUTATION.md sums up. About 17 min
# here for both releases (in parallel, on a shared 2-core machine).
# Not part of ci/test.sh. Usage: bash ci/upstream_mutation.sh [RELEASE...]
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${SGLANG_WHEELS:-.cache/sglang}"
releases=("$@")
[ "${#releases[@]}" -gt 0 ] || releases=(0.5.19 0.5.23)
bash ci/upstream.sh --fetch-only
mkdir -p reference/upstream/mutation
for release in "${releases[@]}"; do
  wheel=$(compgen -G "$cache/sglang-$release-*.whl" | head -n 1) ||
    { echo "ci/upstream_mutation.sh: no sglang-$release wheel in $cache" >&2; exit 2; }
  .venv/bin/python -m reference.upstream.mutate "$wheel" --out "reference/upstream/mutation/$release.md" \
    --log "reference/upstream/mutation/$release.log"
done
