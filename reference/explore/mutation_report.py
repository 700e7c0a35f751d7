"""Summarise a mutmut run (ci/mutation.sh): kill rate and every survivor, one line each.

`python -m reference.explore.mutation_report` reads `mutants/mutmut-cicd-stats.json`
and `mutmut results` in the current directory and prints what MUTATION.md records:
the counts, the kill rate (killed and timed out over all mutants that ran) and each
surviving mutant as `function: - old / + new`, to be given its reason by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _mutmut(*args: str) -> str:
    mutmut = Path(sys.executable).with_name("mutmut")
    return subprocess.run([str(mutmut), *args], capture_output=True, text=True, check=False).stdout


def survivors() -> list[str]:
    return [
        line.split(":")[0].strip()
        for line in _mutmut("results").splitlines()
        if line.strip().endswith("survived")
    ]


def change(name: str) -> str:
    """The mutant's diff as one line: `- old / + new`."""
    lines = [line for line in _mutmut("show", name).splitlines() if line[:2] in ("- ", "+ ")]
    return " / ".join(" ".join(line.split()) for line in lines)


def main() -> int:
    stats_file = Path("mutants/mutmut-cicd-stats.json")
    if not stats_file.exists():
        print(
            "mutation_report: no mutants/mutmut-cicd-stats.json here: run bash ci/mutation.sh",
            file=sys.stderr,
        )
        return 2
    stats = json.loads(stats_file.read_text())
    ran = stats["total"] - stats["skipped"] - stats["no_tests"]
    killed = stats["killed"] + stats["timeout"]
    rate = 100 * killed / ran if ran else 0.0
    counts = f"survived {stats['survived']}, no tests {stats['no_tests']}, suspicious {stats['suspicious']}"
    print(f"mutants {stats['total']}, ran {ran}, killed {killed} ({rate:.1f}%), {counts}")
    for name in survivors():
        print(f"- `{name.split('.')[-1]}`: {change(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
