#!/usr/bin/env bash
# Install the real KV transfer backends into .venv for the CPU tests: Mooncake (TCP
# transport; links against Debian's libibverbs1) and NIXL (UCX), and torch with them.
# Package versions come from pyproject.toml's extras; every pip call goes through
# ci/constraints.txt (nixl-cu12 requires torch: unpinned, that is a multi-GB CUDA build).
# Idempotent: apt runs only when the library is missing, pip only changes what is not
# yet satisfied. Prints the time of each step and the size it added to .venv.
# Usage: bash ci/install-backends.sh [EXTRA ...]     (default: mooncake nixl)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$#" -gt 0 ] || set -- mooncake nixl
[ -x .venv/bin/python ] || bash ci/setup.sh

venv_mb() { du -sm .venv/ | cut -f1; }
timed() {
  local name=$1 t0=$SECONDS before; shift
  before=$(venv_mb)
  "$@"
  echo "install-backends: $name: $((SECONDS - t0))s, venv +$(($(venv_mb) - before)) MB"
}

libibverbs() {
  if ldconfig -p | grep 'libibverbs\.so\.1 ' >/dev/null; then  # not -q: pipefail + SIGPIPE
    echo "install-backends: libibverbs1 already present"
  elif [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libibverbs1 >/dev/null
  else
    echo "install-backends: libibverbs.so.1 missing; as root: apt-get install libibverbs1" >&2
    return 1
  fi
}

requirements() {  # the requirement strings of one pyproject extra
  .venv/bin/python -c 'import sys, tomllib
extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]
print("\n".join(extras[sys.argv[1]]))' "$1"
}

pip_extra() {
  local reqs
  mapfile -t reqs < <(requirements "$1")
  .venv/bin/python -m pip install -q --disable-pip-version-check -c ci/constraints.txt "${reqs[@]}"
}

start=$SECONDS
for extra in "$@"; do
  if [ "$extra" = mooncake ]; then timed libibverbs1 libibverbs; fi
  timed "$extra" pip_extra "$extra"
done
echo "install-backends: total $((SECONDS - start))s, .venv now $(venv_mb) MB"
.venv/bin/python -m reference.dataplane || true  # which backends are usable, and why not
