"""`python -m reference`: run the lessons and print their verdicts."""

import sys

from reference.cli import main

sys.exit(main())
