"""`python -m reference.dataplane`: which KV transfer backends are usable here, and why not."""

import sys

from reference.dataplane.discovery import available_backends


def main() -> int:
    statuses = available_backends().values()
    width = max(len(s.name) for s in statuses)
    for status in statuses:
        state = "usable " if status.usable else "missing"
        print(f"{status.name.ljust(width)}  {state}  {status.detail or status.reason}")
    return 0 if all(s.usable for s in statuses) else 1


if __name__ == "__main__":
    sys.exit(main())
