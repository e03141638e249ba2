"""``python -m pytest_groundeval.cli``: the ``groundeval`` console script."""

import sys

from . import main

sys.exit(main())
