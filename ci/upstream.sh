#!/usr/bin/env bash
# Upstream fidelity. Fetches sglang wheels (no dependencies, never installed; cached in
# .cache/sglang/ or $SGLANG_WHEELS), then checks that upstream's own classes, driven
# through the lessons (the four fixes' and the residual ones), give the verdicts its
# history says (reference/upstream/__init__.py: FIRST_FIXED, BEFORE_FIX, RESIDUAL).
#   bash ci/upstream.sh              the boundary releases of the four fixes and the newest:
#                                    tests/test_upstream_*.py (may not skip here) and each table
#   bash ci/upstream.sh --fetch-only only fetch those (what ci/test.sh does)
#   bash ci/upstream.sh --all        every release from 0.5.11 to the newest on PyPI: writes
#                                    the version matrix reference/upstream/VERSIONS.md; exit 0
#                                    when every verdict is the expected one, an expected
#                                    `unknown` included (restart-recovery on 0.5.15: RESIDUAL)
# Assumes ci/setup.sh test was run.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${SGLANG_WHEELS:-.cache/sglang}"
boundary=(0.5.11 0.5.12 0.5.18 0.5.19 0.5.23)  # before/after each fix, and the newest
mode="${1:-}"

fetch() {
  # Any platform's wheel holds the same Python sources; pin one so every host gets it.
  compgen -G "$cache/sglang-$1-*.whl" >/dev/null ||
    .venv/bin/python -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --python-version 3.11 --implementation cp --platform manylinux_2_34_x86_64 "sglang==$1" -d "$cache"
}

mkdir -p "$cache"
if [ "$mode" = --all ]; then
  # Every release from 0.5.11 on (post releases included), as PyPI lists them.
  mapfile -t versions < <(.venv/bin/python -m pip index versions sglang --disable-pip-version-check 2>/dev/null |
    sed -n 's/^Available versions: //p' | tr ',' '\n' | tr -d ' ' |
    .venv/bin/python -c 'import sys; from reference.upstream import _release
print("\n".join(v for v in sys.stdin.read().split() if _release(v) >= (0, 5, 11)))')
  [ "${#versions[@]}" -gt 0 ] || { echo "ci/upstream.sh: pip index versions sglang listed nothing" >&2; exit 2; }
  for version in "${versions[@]}"; do fetch "$version"; done
  exec .venv/bin/python -m reference.upstream.matrix --wheels "$cache"
fi
for version in "${boundary[@]}"; do fetch "$version"; done
[ "$mode" = --fetch-only ] && exit 0
SGLANG_WHEELS="$cache" SGLANG_WHEELS_REQUIRED=1 .venv/bin/python -m pytest -q tests/test_upstream_*.py
for version in "${boundary[@]}"; do
  wheel=$(compgen -G "$cache/sglang-$version-*.whl" | head -n 1)
  # Every lesson, the four fixes' and what they leave open, as its history says: exit 0.
  .venv/bin/python -m reference --sglang "$wheel"
done
