"""``python -m spamkit`` is the ``spamkit`` command."""

import sys

from .launch import main

sys.exit(main())
