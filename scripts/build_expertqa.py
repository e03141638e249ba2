"""Build ``datasets/expertqa`` from ExpertQA's annotated answers, and measure agreement.

Source: chaitanyamalaviya/ExpertQA, ``data/lfqa/rand_test.jsonl`` (first 180 rows),
MIT licence. Each row is one expert question with one system's answer; the answer's
claims carry the evidence URLs the system cited and the annotators' ``support`` and
``reliability`` labels. Each row becomes one ``review`` item (docs/dataset.md, docs/evidence-risk.md): the
answer as the recorded response, its claims and cited sources as the evidence
block. Tiers and assertiveness are *derived* (rules below, documented in
``datasets/expertqa/README.md``); nobody labelled them as such.

Usage::

    python scripts/build_expertqa.py                  # regenerate datasets/expertqa
    python scripts/build_expertqa.py --out DIR        # write somewhere else
    python scripts/build_expertqa.py --agreement      # print the agreement figures

The output is deterministic: the same source gives byte-identical files.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import xxhash

from pytest_groundeval.core.evidence import TIERS, EvidenceBlock, FindingVerdict, Tier, review_answer

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "datasets" / "expertqa"
VERSION = "expertqa-1"
"""The dataset version (docs/dataset.md): a label of its own, so a baseline of another dataset never applies."""
FLOORS = {"evidenceRiskScore": 0.28}
"""The manifest's gate floors (docs/gate.md): the default run measures evidenceRiskScore 0.3019
over the reviewed answers, floor 0.02 below, rounded down (README.md)."""

QUESTIONS_FILE = "questions.txt"
"""The corpus document: the expert questions, one per line, in row order (line ``row + 1``
holds the question of ``expertqa-<row>-*``; review items have no ``question`` field)."""

RELIABILITY_TIER: dict[str, Tier] = {
    "Reliable": "reputable",
    "Somewhat reliable": "community",
    "Not reliable at all": "unverified",
    # The annotator gave no judgement of the source: nobody vouches for it.
    "Missing": "unverified",
    "N/A": "unverified",
}
"""Annotator ``reliability`` label → declared tier (before the domain hints)."""

OFFICIAL_SUFFIXES = (".gov", ".mil", ".int")
"""Host suffixes (also as ``.gov.<cc>``) that lift a *Reliable* source to ``official``."""

SCHOLARLY_DOMAINS = (
    "ncbi.nlm.nih.gov",
    "doi.org",
    "nature.com",
    "springer.com",
    "sciencedirect.com",
    "wiley.com",
    "tandfonline.com",
    "frontiersin.org",
    "biomedcentral.com",
    "plos.org",
    "jstor.org",
    "sagepub.com",
    "academic.oup.com",
    "jamanetwork.com",
    "thelancet.com",
    "nejm.org",
    "bmj.com",
    "mdpi.com",
)
"""Publisher and index domains that lift a *Reliable* source to ``peer_reviewed``."""

TENTATIVE_WORDS = frozenset(
    "may might could possibly possible perhaps maybe potentially suggest suggests "
    "suggested appear appears appeared seem seems seemed unclear uncertain believed".split()
)
"""Any of these words (whole word, any case) makes a claim ``tentative``."""

LIKELY_WORDS = frozenset(
    "likely probably generally usually typically often commonly sometimes tend tends "
    "can estimated approximately".split()
)
"""Otherwise any of these makes it ``likely``; a claim with neither is ``definitive``."""

_CITATION_MARKER = re.compile(r"\s*\[\d+\]")
_EVIDENCE_HEAD = re.compile(r"\[(\d+)\]\s+(\S+)")
_WORD = re.compile(r"[a-z]+")
_VERDICT_ORDER: tuple[FindingVerdict, ...] = ("pass", "soften", "flag_for_human_review", "remove")
_SUPPORT_ORDER = ("Complete", "Partial", "Incomplete", "Missing")


def strip_citations(claim_string: str) -> str:
    """The claim without its ``[n]`` citation markers (and the space before each)."""
    return _CITATION_MARKER.sub("", claim_string).strip()


def assertiveness_of(claim_string: str) -> str:
    """Derive a claim's assertiveness from hedging words (``TENTATIVE_WORDS``, ``LIKELY_WORDS``)."""
    words = set(_WORD.findall(strip_citations(claim_string).lower()))
    if words & TENTATIVE_WORDS:
        return "tentative"
    if words & LIKELY_WORDS:
        return "likely"
    return "definitive"


def tier_of(url: str, reliability: str) -> Tier:
    """Derive a source's tier from the annotator's reliability label and, for *Reliable*, its host."""
    tier = RELIABILITY_TIER[reliability]
    if tier != "reputable":
        return tier
    host = (urlsplit(url).hostname or "").lower()
    if host.endswith(OFFICIAL_SUFFIXES) or ".gov." in host:
        return "official"
    if any(host == d or host.endswith("." + d) for d in SCHOLARLY_DOMAINS):
        return "peer_reviewed"
    return tier


def weaker(a: Tier, b: Tier) -> Tier:
    """The weaker of two tiers (used when claims label the same source differently)."""
    return a if TIERS.index(a) > TIERS.index(b) else b


def cited_urls(claim: dict) -> list[str]:
    """The distinct evidence URLs of one annotated claim, in citation order."""
    urls: list[str] = []
    for evidence in claim["evidence"]:
        head = _EVIDENCE_HEAD.match(evidence)
        if head is None:
            raise ValueError(f"evidence does not start with '[n] URL': {evidence[:80]!r}")
        if head.group(2) not in urls:
            urls.append(head.group(2))
    return urls


def evidence_block(answer: dict, profile: str) -> dict:
    """The docs/evidence-risk.md evidence block (camelCase JSON) for one system answer."""
    source_ids: dict[str, str] = {}
    source_tiers: dict[str, Tier] = {}
    claims = []
    for n, claim in enumerate(answer["claims"], start=1):
        ids = []
        for url in cited_urls(claim):
            tier = tier_of(url, claim["reliability"])
            if url not in source_ids:
                source_ids[url] = f"s{len(source_ids) + 1}"
                source_tiers[url] = tier
            else:
                source_tiers[url] = weaker(source_tiers[url], tier)
            ids.append(source_ids[url])
        text = claim["claim_string"]
        entry = {
            "id": f"c{n}",
            "text": text,
            "assertiveness": assertiveness_of(text),
            "sourceIds": ids,
        }
        bare = strip_citations(text)
        if bare != text.strip():
            entry["match"] = [bare]
        claims.append(entry)
    sources = [{"id": sid, "url": url, "declaredTier": source_tiers[url]} for url, sid in source_ids.items()]
    return {"profile": profile, "minScore": 0.5, "claims": claims, "sources": sources}


def item_id(row: int, system: str) -> str:
    """Stable item id: ``expertqa-<row, 3 digits from 000>-<system>``."""
    return f"expertqa-{row:03d}-{system}"


def read_rows(src: Path) -> list[dict]:
    """The source JSON lines, in file order."""
    with src.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def iter_answers(rows: Sequence[dict]) -> Iterator[tuple[int, str, dict, dict]]:
    """Yield ``(row, system, row_dict, answer)`` for every system answer, systems sorted."""
    for row, record in enumerate(rows):
        for system in sorted(record["answers"]):
            yield row, system, record, record["answers"][system]


def build_manifest(rows: Sequence[dict], questions: bytes) -> dict:
    """The v1 manifest (docs/dataset.md) for the given source rows."""
    items = []
    for row, system, record, answer in iter_answers(rows):
        items.append(
            {
                "id": item_id(row, system),
                "kind": "review",
                "response": {"answer": answer["answer_string"]},
                "evidence": evidence_block(answer, record["metadata"]["field"]),
                "tags": ["expertqa", system],
            }
        )
    return {
        "version": VERSION,
        "floors": dict(FLOORS),
        "corpus": [
            {
                "name": "expertqa/questions.txt",
                "label": "EXPERTQA_QUESTION",
                "file": QUESTIONS_FILE,
                "format": "text",
            }
        ],
        "corpusHashes": {QUESTIONS_FILE: xxhash.xxh3_64_hexdigest(questions)},
        "items": items,
    }


def questions_text(rows: Sequence[dict]) -> bytes:
    """The corpus file: one question per line, whitespace collapsed, UTF-8, LF endings."""
    return "".join(" ".join(r["question"].split()) + "\n" for r in rows).encode("utf-8")


def build(src: Path, out: Path) -> None:
    """Write ``manifest.json``, ``corpus/questions.txt`` and ``LICENSE`` under ``out``."""
    rows = read_rows(src)
    questions = questions_text(rows)
    manifest = build_manifest(rows, questions)
    (out / "corpus").mkdir(parents=True, exist_ok=True)
    (out / "corpus" / QUESTIONS_FILE).write_bytes(questions)
    text = json.dumps(manifest, ensure_ascii=False, indent=1) + "\n"
    (out / "manifest.json").write_bytes(text.encode("utf-8"))
    shutil.copyfile(src.parent / "LICENSE", out / "LICENSE")


@dataclass(frozen=True)
class Agreement:
    """A 2x2 agreement table between our per-claim verdicts and the annotators' support."""

    title: str
    ours_yes: str
    theirs_yes: str
    both: int
    ours_only: int
    theirs_only: int
    neither: int

    @property
    def total(self) -> int:
        """Claims compared."""
        return self.both + self.ours_only + self.theirs_only + self.neither

    @property
    def rate(self) -> float:
        """Observed agreement."""
        return (self.both + self.neither) / self.total

    @property
    def kappa(self) -> float:
        """Cohen's kappa: agreement beyond what the two marginals give by chance."""
        n = self.total
        ours = (self.both + self.ours_only) / n
        theirs = (self.both + self.theirs_only) / n
        chance = ours * theirs + (1 - ours) * (1 - theirs)
        return (self.rate - chance) / (1 - chance)

    def markdown(self) -> str:
        """The table and figures as Markdown."""
        return "\n".join(
            [
                f"**{self.title}** ({self.total} claims)",
                "",
                f"| | annotators: {self.theirs_yes} | annotators: not |",
                "|---|---:|---:|",
                f"| ours: {self.ours_yes} | {self.both} | {self.ours_only} |",
                f"| ours: not | {self.theirs_only} | {self.neither} |",
                "",
                f"Agreement {self.rate:.3f}, Cohen's kappa {self.kappa:.3f}.",
            ]
        )


def claim_labels(rows: Sequence[dict]) -> list[tuple[FindingVerdict, str, bool]]:
    """``(our verdict, annotators' support, cites a source)`` per asserted claim, support ``N/A`` excluded."""
    triples: list[tuple[FindingVerdict, str, bool]] = []
    for _row, _system, record, answer in iter_answers(rows):
        block = EvidenceBlock.model_validate(evidence_block(answer, record["metadata"]["field"]))
        review = review_answer(block, answer["answer_string"])
        verdicts = {f.claim_id: f.verdict for f in review.findings}
        for n, claim in enumerate(answer["claims"], start=1):
            if claim["support"] in _SUPPORT_ORDER and f"c{n}" in verdicts:
                triples.append((verdicts[f"c{n}"], claim["support"], bool(claim["evidence"])))
    return triples


def agreement_report(rows: Sequence[dict]) -> str:
    """The agreement section of the dataset README, as Markdown."""
    triples = claim_labels(rows)
    pairs = [(verdict, support) for verdict, support, _sourced in triples]
    sourced = [(verdict, support) for verdict, support, has_source in triples if has_source]

    def table(
        title: str,
        ours_yes: set[str],
        theirs_yes: set[str],
        ours: str,
        theirs: str,
        claims: list[tuple[FindingVerdict, str]] = pairs,
    ) -> Agreement:
        cells = {(o, t): 0 for o in (True, False) for t in (True, False)}
        for verdict, support in claims:
            cells[(verdict in ours_yes, support in theirs_yes)] += 1
        return Agreement(
            title, ours, theirs, cells[(True, True)], cells[(True, False)], cells[(False, True)], cells[(False, False)]
        )

    strict = table("pass vs Complete", {"pass"}, {"Complete"}, "pass", "Complete")
    lenient = table(
        "pass or soften vs Complete or Partial",
        {"pass", "soften"},
        {"Complete", "Partial"},
        "pass/soften",
        "Complete/Partial",
    )
    strict_sourced = table(
        "pass vs Complete, claims that cite a source only",
        {"pass"},
        {"Complete"},
        "pass",
        "Complete",
        sourced,
    )
    counts = {(v, s): 0 for v in _VERDICT_ORDER for s in _SUPPORT_ORDER}
    for pair in pairs:
        counts[pair] += 1
    cross = [
        "| our verdict | " + " | ".join(_SUPPORT_ORDER) + " |",
        "|---|" + "---:|" * len(_SUPPORT_ORDER),
    ]
    for verdict in _VERDICT_ORDER:
        cross.append(f"| {verdict} | " + " | ".join(str(counts[(verdict, s)]) for s in _SUPPORT_ORDER) + " |")
    return (
        "\n\n".join(
            [
                strict.markdown(),
                lenient.markdown(),
                strict_sourced.markdown(),
                "**Verdict by support label**\n\n" + "\n".join(cross),
            ]
        )
        + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Build the dataset (default) or print the agreement figures (``--agreement``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--src", type=Path, required=True, help="The source file, e.g. ../shared/data/expertqa/rand_test.first180.jsonl"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Output dataset directory")
    parser.add_argument("--agreement", action="store_true", help="Print agreement figures instead of building")
    args = parser.parse_args(argv)
    if not args.src.is_file():
        print(f"build_expertqa: source file not found: {args.src}", file=sys.stderr)
        return 2
    if args.agreement:
        sys.stdout.write(agreement_report(read_rows(args.src)))
    else:
        build(args.src, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
