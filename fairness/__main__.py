"""``python -m fairness FILE.csv --group COLUMN --score COLUMN [--json]``."""
import sys

from fairness.cli import main

sys.exit(main())
