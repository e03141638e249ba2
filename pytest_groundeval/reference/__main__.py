"""``python -m pytest_groundeval.reference``: same as ``groundeval reference``."""

import sys

from pytest_groundeval.cli.reference import main

sys.exit(main())
