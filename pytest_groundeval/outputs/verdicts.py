"""The colour of a verdict in the HTML report, by what it means, and the legend that says so (docs/ci.md).

Two vocabularies meet in the page: the verdicts a target gives its claims
(``core.contract.CLAIM_VERDICTS``: docs/target-contract.md) and those a citation judge
gives a paragraph (``core.judging.JUDGE_VERDICTS`` plus ``unparseable`` and
``unjudged``: docs/citation.md), with the deterministic checks' ``pass``,
``metadataMismatch`` and ``missingSource``. Each verdict has one *tone*, the same
wherever it is drawn (chart bar, chip, marked claim, confusion table):

- ``good`` (green): backed by the evidence;
- ``warn`` (amber): not backed, or only in part;
- ``bad`` (red): the evidence says otherwise, or the citation points at the wrong source;
- ``neutral`` (grey): no verdict on the answer (the judge's reply was unreadable or never came,
  or the claim has nothing to be checked against).

The page's colours for the tones (``html_assets.STYLE``) keep white chip text at a
contrast of 4.5:1 or more (WCAG 2.1, success criterion 1.4.3, "Contrast (Minimum)").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from types import MappingProxyType

TONES: tuple[str, ...] = ("good", "warn", "bad", "neutral")
"""The tones, best first."""

VERDICT_TONES: Mapping[str, str] = MappingProxyType(
    {
        "supported": "good",
        "pass": "good",
        "partial": "warn",
        "unsupported": "warn",
        "contradicted": "bad",
        "wrong_speaker": "bad",
        "wrong_attribution": "bad",
        "metadataMismatch": "bad",
        "missingSource": "bad",
        "unverifiable": "neutral",
        "unparseable": "neutral",
        "unjudged": "neutral",
    }
)
"""Verdict -> tone; a verdict not listed (an extension's) is ``neutral``."""

VERDICT_MEANINGS: Mapping[str, str] = MappingProxyType(
    {
        "supported": "backed by the cited evidence",
        "pass": "the deterministic checks passed (no judge ran)",
        "partial": "some statements backed, others not",
        "unsupported": "the evidence does not back it",
        "contradicted": "the evidence says otherwise",
        "wrong_speaker": "in a cited source, but said by someone else",
        "wrong_attribution": "in another source of the answer, not the one cited",
        "metadataMismatch": "a name, entity or date differs from the cited source's, or the source the item expects is not shown",
        "missingSource": "cites a marker that names no source",
        "unverifiable": "nothing to check it against",
        "unparseable": "no readable reply from the judge",
        "unjudged": "the judge did not answer",
    }
)
"""Verdict -> what it means, for the legends (docs/target-contract.md, docs/citation.md)."""


def tone(verdict: str) -> str:
    """The tone of ``verdict`` (one of ``TONES``); ``neutral`` for one the page does not know."""
    return VERDICT_TONES.get(verdict, "neutral")


def legend(verdicts: Iterable[str], *, element_id: str | None = None) -> str:
    """An HTML legend: a swatch, the verdict and its meaning for each of ``verdicts``, in the order given.

    Args:
        verdicts: The verdicts to explain (repeats are dropped); untrusted text is escaped.
        element_id: An ``id`` for the legend element, or None.
    """
    entries = "".join(
        f'<li><span class="swatch t-{tone(v)}"></span><span class="lv">{escape(v)}</span> {escape(VERDICT_MEANINGS.get(v, ""))}</li>'
        for v in dict.fromkeys(verdicts)
    )
    ident = f' id="{escape(element_id)}"' if element_id else ""
    return f'<ul class="legend"{ident}>{entries}</ul>'
