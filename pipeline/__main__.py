"""`python -m groupcoord.pipeline --data-dir D --out R` (also what spark-submit runs on a cluster)."""

import sys

from groupcoord.pipeline.cli import main

if __name__ == "__main__":
    sys.exit(main())
