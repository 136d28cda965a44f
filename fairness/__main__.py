"""``python -m fairness FILE.csv --group COLUMN --score COLUMN [--json]``."""

import os
import sys

from fairness.cli import main

try:
    status = main()
    sys.stdout.flush()
except BrokenPipeError:
    # The reader left early (e.g. `| head`): end quietly, as Unix tools do. Python's
    # recipe: point stdout at devnull so the flush at exit does not fail again.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    status = 1
sys.exit(status)
