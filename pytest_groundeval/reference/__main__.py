"""``python -m pytest_groundeval.reference``: same as ``groundeval reference``."""

import sys

from .cli import main

sys.exit(main())
