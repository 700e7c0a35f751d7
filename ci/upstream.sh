#!/usr/bin/env bash
# Upstream fidelity: fetch the sglang 0.5.11, 0.5.12, 0.5.18, 0.5.19 and 0.5.23 wheels (no dependencies,
# never installed; cached in .cache/sglang/ or $SGLANG_WHEELS), then check that
# upstream's own classes, driven through the lessons, give the verdicts its history
# says (tests/test_upstream_*.py; they may not skip here) and print each verdict table.
# Assumes ci/setup.sh test was run. Usage: bash ci/upstream.sh [--fetch-only]
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${SGLANG_WHEELS:-.cache/sglang}"
versions=(0.5.11 0.5.12 0.5.18 0.5.19 0.5.23)  # each fix's boundary and the newest
mkdir -p "$cache"
for version in "${versions[@]}"; do
  if ! compgen -G "$cache/sglang-$version-*.whl" >/dev/null; then
    # Any platform's wheel holds the same Python sources; pin one so every host gets it.
    .venv/bin/python -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --python-version 3.11 --implementation cp --platform manylinux_2_34_x86_64 \
      "sglang==$version" -d "$cache"
  fi
done
[ "${1:-}" = "--fetch-only" ] && exit 0
SGLANG_WHEELS="$cache" SGLANG_WHEELS_REQUIRED=1 .venv/bin/python -m pytest -q tests/test_upstream_*.py
for version in "${versions[@]}"; do
  wheel=$(compgen -G "$cache/sglang-$version-*.whl" | head -n 1)
  .venv/bin/python -m reference --sglang "$wheel"  # every verdict as expected: exit 0
done
