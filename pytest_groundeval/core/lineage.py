"""What a run records about its lineage, its baseline and a merge: leaf models of the report (docs/gate.md).

``ModelLineage`` (the models a run used), ``BaselineInfo`` (the baseline its recall
was compared with, as ``core.gate.summarize_baseline`` took it) and ``MergeInfo``
(what ``groundeval merge`` combined) are read by the gate and written in the
report; they import nothing of the package but ``core.wire``, so ``core.gate``
and ``core.report`` both use them without importing each other.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, model_serializer

from .wire import WireModel

UNKNOWN = "unknown"
"""The dataset version or model name nobody reported."""

UNKNOWN_MODELS = {"generate": UNKNOWN, "embed": UNKNOWN}
"""The lineage of a run whose target never said its models (copy it before changing it)."""


class ModelLineage(WireModel):
    """The models a run used; ``"unknown"`` when the target did not say (docs/gate.md)."""

    generate: str
    """Generation model name."""
    embed: str
    """Embedding model name."""


class MergeInfo(WireModel):
    """What ``groundeval merge`` combined, and what it found missing (docs/ci.md)."""

    shards: list[str]
    """The shards merged, as ``"K/N"``, in index order."""
    missing_shards: list[str] = Field(default_factory=list)
    """Shards of ``1..N`` no report was given for."""
    dataset_items: int = Field(ge=0)
    """Items in the whole dataset."""
    missing_items: int = Field(default=0, ge=0)
    """Dataset items no merged report accounts for; any fails the gate."""
    missing_item_ids: list[str] | None = None
    """Their ids when known (a missing shard's ids are known only when merge was given the dataset)."""


class BaselineInfo(WireModel):
    """The baseline a run compared retrieval recall with, as ``core.gate.summarize_baseline`` took it (docs/gate.md).

    Recorded so that ``groundeval gate --report R`` re-applies the same recall check
    without the baseline file: the figure is the baseline's recall over the qa items
    this run covered, not its whole-dataset figure, when the baseline lists its items.
    """

    path: str | None = None
    """The baseline file as the run named it (``--eval-baseline``, or the dataset's
    ``baseline.json``), relative to the run's directory when under it; for people."""
    dataset_version: str
    """The baseline's dataset version; the check is skipped when it is not the run's."""
    models: ModelLineage
    """The baseline's model lineage; the check is skipped unless it is the run's, both known."""
    model_config = ConfigDict(allow_inf_nan=False)

    retrieval_recall: float | None = Field(default=None, ge=0, le=1, strict=True)
    """The figure compared with: the baseline's recall over the qa items this run covered
    (``qa_items`` set), or its overall ``retrievalRecall`` (``qa_items`` None); None when
    it measured none or lacks some of the items."""
    qa_items: int | None = Field(default=None, ge=0)
    """qa items of this run the figure covers; None when the baseline's overall figure was used."""
    baseline_qa_items: int | None = Field(default=None, ge=0)
    """qa items in the baseline (the figure is its whole one when equal to ``qa_items``)."""
    missing_items: int = Field(default=0, ge=0)
    """qa items of this run the baseline does not list; any skips the check (no figure)."""
    evidence_expected: int | None = Field(default=None, ge=0)
    """Expected evidence strings of the covered items in the baseline (the figure's denominator)."""
    evidence_found: int | None = Field(default=None, ge=0)
    """Of those, found by the baseline's run (the figure's numerator)."""
    recall_p_value: float | None = Field(default=None, ge=0, le=1)
    """Two-sided p-value of the paired sign-flip test of the recall change (this run − baseline) over the
    qa items both list (docs/statistics.md, "Paired comparison"); None when not tested: the baseline lists
    no items (a recorded summary) or this run's item figures were not given. Written only when set."""
    paired_items: int | None = Field(default=None, ge=0)
    """qa items with expected evidence the test paired; fewer than ``log2(2 / alpha)`` (5 at 0.05) cannot
    make any drop significant, and the check keeps its fixed margin. Written only when set."""
    alpha: float | None = Field(default=None, gt=0, lt=1)
    """The significance level a drop beyond the margin must reach to FAIL the check (``--eval-alpha``).
    Written only when set."""

    @model_serializer(mode="wrap")
    def _omit_untested(self, handler: Any) -> dict[str, Any]:
        # A baseline record without a paired test keeps the shape it always had.
        data: dict[str, Any] = handler(self)
        for key in ("recall_p_value", "recallPValue", "paired_items", "pairedItems", "alpha"):
            if data.get(key, 0) is None:
                data.pop(key)
        return data
