"""pytest-groundeval: gate the answer quality of grounded-answer systems in CI."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
