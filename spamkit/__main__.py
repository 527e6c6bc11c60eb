"""``python -m spamkit`` is the ``spamkit`` command."""

import sys

from .cli import main

sys.exit(main())
