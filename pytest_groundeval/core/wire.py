"""Base model shared by every wire model: camelCase on the wire, snake_case in Python."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """A pydantic model whose JSON keys are camelCase and whose unknown keys are errors.

    Both spellings are accepted on input (``populate_by_name``); output uses the
    camelCase aliases when dumped with ``by_alias=True`` (docs/dataset.md).
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
    )

    def to_wire(self) -> dict[str, Any]:
        """Dump as JSON-ready built-ins with camelCase keys (safe for xdist and JSON)."""
        return self.model_dump(mode="json", by_alias=True)
