"""``python -m pytest_groundeval.mock``: the same as ``groundeval mock``."""

import sys

from pytest_groundeval.cli.mock import main

sys.exit(main())
