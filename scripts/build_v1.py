"""Build ``datasets/v1`` from the real labelled data in ``../shared/data`` (issue 6).

The output is a pure function of the input files: the same sources give the
same bytes (deterministic ordering, no timestamps, ``json.dumps(...,
ensure_ascii=False, indent=2)`` plus a trailing newline), so
``tests/datasets/test_v1.py`` can rebuild into a temporary directory and compare.

Sources and what each becomes (the design is explained in ``datasets/v1/README.md``):

* HaluEval (``halueval/``, MIT): knowledge passages become paragraphs of text
  documents, 32 qa rows (8 adversarial rows) to a label; questions become ``qa``
  items; answer sentences become planted qa drafts (a restatement, true; the
  answer then the hallucination, false); hallucinated answers become
  ``adversarial`` items, alternately ``ECHO:`` and ``ECHO-CITED:``.
* TruthfulQA-multi (``truthfulqa-multi/``, Apache-2.0), English and Spanish:
  correct answers become JSON records, eight questions to a label, except one
  held-out answer per question planted as a qa paraphrase draft; one incorrect
  answer per question becomes an ``adversarial`` item (``near_miss`` when it
  shares most of its words with a correct answer), another a false qa draft.
  Paraphrases that restate no corpus answer and incorrect answers that are not
  fair go to the hard dataset (``build_datasets``, ``scripts/build_hard.py``).
* TimeQA (``timeqa/``, BSD-3-Clause): an entity's time-bound facts become
  bitemporal records; ``temporal`` items probe them as of a valid time, as of a
  transaction time before and after a synthetic correction, and by comparing
  the two transaction times.

A planted falsehood is kept only when a verifier following docs/target-contract.md can reject
it against *every* chunk under its label (any of them may end up as the cited
``[S1]``): it must bring a content word, a number or a negation that the chunk
lacks. A "falsehood" that the evidence itself states (HaluEval sometimes
hallucinates by naming a different entity from the passage) is not a fair
adversarial item and is left out.

Usage::

    python scripts/build_v1.py [--data DIR] [--out DIR]
    python scripts/build_v1.py --trim-baseline datasets/v1/baseline.json   # after re-recording it

``--data`` defaults to ``../shared/data`` relative to the repository root,
``--out`` to ``datasets/v1``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import xxhash

from pytest_groundeval.core.scoring import (
    COVERAGE_THRESHOLD,
    STOP_WORDS,
    claim_coverage,
    claim_is_true,
    content_tokens,
    is_number_token,
    negation_key,
    normalize_text,
    tokenize,
)
from pytest_groundeval.mock.behaviour import split_sentences

T = TypeVar("T")

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"
DEFAULT_OUT = REPO_ROOT / "datasets" / "v1"

HALUEVAL_FILE = "halueval/qa_one-turn_data.first400.jsonl"
TRUTHFULQA_FILES = {"en": "truthfulqa-multi/en/validation.json", "es": "truthfulqa-multi/es/validation.json"}
TIMEQA_FILE = "timeqa/human_annotated_test.json"
LICENSES = {
    "halueval-LICENSE.txt": "halueval/LICENSE",
    "truthfulqa-multi-LICENSE.txt": "truthfulqa-multi/LICENSE",
    "timeqa-LICENSE.txt": "timeqa/LICENSE",
}

ROWS_PER_LABEL = 8
"""HaluEval adversarial rows (passages) and TruthfulQA questions grouped under one label."""
QA_ROWS_PER_LABEL = 32
"""HaluEval qa rows (passages) under one label.

The target returns four evidence blocks per question; with 32 passages to
choose from, retrieval has to rank, so ``retrievalRecall`` measures ranking
(BM25 plus embeddings), not the label filter.
"""
QA_HALUEVAL = 160
ADV_HALUEVAL = 80
ADV_TRUTHFULQA = {"en": 60, "es": 40}
TRUTHFULQA_FIRST_QUESTION = {"en": 0, "es": 400}
"""Where each language starts in the 817 questions, so the two languages cover different questions."""
TEMPORAL_ENTITIES = 18
"""TimeQA entities used; each gives four temporal items."""
MIN_FACTS = 3

NO_ANSWER = re.compile(r"no comment|ningún comentario|^unknown$|^se desconoce$", re.IGNORECASE)
"""TruthfulQA correct answers that are refusals, not evidence."""

# HaluEval joins its two Wikipedia passages with no space ("...century.First for
# Women is..."); a full stop glued to a capital after a lower-case letter, digit
# or closing punctuation is such a seam (abbreviations like "U.S.A" are left alone).
_PASSAGE_SEAM = re.compile(r"(?<=[a-z0-9)\]\"'%])\.(?=[A-Z\"“])")
_SENTENCE_END = re.compile(r"(?<=\.)\s+")
_SPACE = re.compile(r"\s+")
_PARENTHETICAL = re.compile(r"\s*\([^()]*\)")

_MONTH = r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
_PERIOD = re.compile(
    rf"\b(?:from|in|between|during)\s+(?:{_MONTH}\s+)?(\d{{4}})\s*(?:to|and|until|-|–)\s*(?:{_MONTH}\s+)?(\d{{4}})\b",
    re.IGNORECASE,
)
_SINGLE = re.compile(rf"\bin\s+(?:{_MONTH}\s+)?(\d{{4}})\b", re.IGNORECASE)
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

WIKIDATA_RELATIONS = {
    "P6": "head of government", "P17": "country", "P26": "spouse", "P27": "country of citizenship",
    "P35": "head of state", "P36": "capital", "P39": "position held", "P54": "member of sports team",
    "P69": "educated at", "P102": "member of political party", "P106": "occupation", "P108": "employer",
    "P115": "home venue", "P118": "league", "P121": "item operated", "P123": "publisher",
    "P127": "owned by", "P137": "operator", "P159": "headquarters location", "P166": "award received",
    "P169": "chief executive officer", "P176": "manufacturer", "P264": "record label", "P276": "location",
    "P286": "head coach", "P366": "use", "P371": "presenter", "P410": "military rank",
    "P449": "original broadcaster", "P463": "member of", "P466": "occupant", "P488": "chairperson",
    "P551": "residence", "P559": "terminus", "P641": "sport", "P749": "parent organization",
    "P793": "significant event", "P800": "notable work", "P937": "work location",
    "P1037": "director or manager", "P1075": "rector", "P1365": "replaces", "P1376": "capital of",
    "P1416": "affiliation", "P1435": "heritage designation", "P1448": "official name",
    "P2962": "title of chess person", "P4791": "commanded by", "P6087": "coach of sports team",
    "P8047": "country of registry",
}  # fmt: skip
"""Wikidata property ids used by TimeQA's ``type`` field, with their English labels."""


class BuildError(Exception):
    """The source data does not have the shape this script expects (names the file and row)."""


# --------------------------------------------------------------------------- text helpers


def dumps(value: Any) -> bytes:
    """The house JSON encoding: UTF-8, non-ASCII kept, two-space indent, trailing newline."""
    return (json.dumps(value, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def canonical_record(record: dict[str, Any]) -> str:
    """A JSON record as the target chunks it (docs/dataset.md): sorted keys, compact separators."""
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def halueval_paragraph(knowledge: str) -> str:
    """HaluEval knowledge as one paragraph: passage seams get their missing space, whitespace collapsed."""
    return _SPACE.sub(" ", _PASSAGE_SEAM.sub(". ", knowledge)).strip()


def sentences(paragraph: str) -> list[str]:
    """Split at a full stop followed by whitespace, as the mock's decomposition does (docs/mock.md)."""
    return [s for s in _SENTENCE_END.split(paragraph) if s]


def claim_sentences(text: str) -> list[str]:
    """The claims the mock's decomposition makes of ``text`` (docs/mock.md): it also ends a sentence at ``!``/``?``.

    A planted draft or falsehood is checked with this, not ``sentences``, so
    that the single ``[S1]`` of ``ECHO-CITED`` lands where the build expects.
    """
    return [text[s.start : s.end] for s in split_sentences(text)]


def as_sentence(answer: str) -> str:
    """A short answer as a sentence: stripped, with a final full stop unless it ends in punctuation."""
    text = _SPACE.sub(" ", answer).strip()
    return text if text[-1:] in ".!?" else text + "."


def slug(text: str) -> str:
    """ASCII letters, digits and single hyphens, lower-case: usable in an item id (docs/dataset.md)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


# --------------------------------------------------------------------------- falsehood filter


def _shares_stem(token: str, others: Iterable[str]) -> bool:
    """Whether ``token`` matches a token of ``others`` up to inflection.

    Deliberately lenient (a shared four-letter prefix, or all but the last two
    letters of a short word: "started"/"start", "women"/"woman"), so that a
    falsehood kept by ``rejectable`` brings in a word that is clearly new.
    """
    for other in others:
        if other == token:
            return True
        common = 0
        for a, b in zip(token, other):
            if a != b:
                break
            common += 1
        if common >= 4 or (common >= 3 and common >= min(len(token), len(other)) - 2):
            return True
    return False


def rejectable(falsehood: str, span: str) -> bool:
    """Whether a verifier following docs/scoring.md, docs/target-contract.md can refuse ``falsehood`` when it cites ``span``.

    True when the span covers less than ``COVERAGE_THRESHOLD`` of the claim's
    tokens, lacks one of its numbers or negations, or lacks one of its content
    words (up to inflection, see ``_shares_stem``).
    """
    claim_tokens = set(tokenize(falsehood))
    span_tokens = set(tokenize(span))
    if claim_coverage(falsehood, span) < COVERAGE_THRESHOLD:
        return True
    if {t for t in claim_tokens if is_number_token(t)} - span_tokens:
        return True
    claim_negations = {negation_key(t) for t in claim_tokens} - {None}
    span_negations = {negation_key(t) for t in span_tokens} - {None}
    if claim_negations - span_negations:
        return True
    return any(not _shares_stem(t, span_tokens) for t in content_tokens(falsehood) if not is_number_token(t))


MIN_CONTENT_WORDS = 3
"""A planted falsehood needs this many content tokens: "Pop rock." is an answer, not a statement."""


def fair_falsehood(falsehood: str, spans: Sequence[str]) -> bool:
    """A planted falsehood is fair when it is one statement and rejectable against every span of its label.

    One statement: one sentence (so the single ``[S1]`` of ``ECHO-CITED`` cites
    all of it) with at least ``MIN_CONTENT_WORDS`` content tokens.
    """
    if len(claim_sentences(falsehood)) != 1 or len(set(content_tokens(falsehood))) < MIN_CONTENT_WORDS:
        return False
    return all(rejectable(falsehood, span) for span in spans)


# --------------------------------------------------------------------------- HaluEval


@dataclass(frozen=True)
class HaluRow:
    """One HaluEval row with its position in the source file."""

    index: int
    paragraph: str
    question: str
    right_answer: str
    hallucinated: str


def read_halueval(path: Path) -> list[HaluRow]:
    """Read the HaluEval JSON lines; raises ``BuildError`` naming the line on a missing field."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BuildError(f"{path}: {exc}") from exc
    rows = []
    for index, line in enumerate(lines):
        try:
            raw = json.loads(line)
            rows.append(
                HaluRow(
                    index,
                    halueval_paragraph(raw["knowledge"]),
                    _SPACE.sub(" ", raw["question"]).strip(),
                    raw["right_answer"].strip(),
                    _SPACE.sub(" ", raw["hallucinated_answer"]).strip(),
                )
            )
        except (ValueError, KeyError, AttributeError) as exc:
            raise BuildError(f"{path}: line {index + 1}: {exc!r}") from exc
    return rows


def answer_sentence(row: HaluRow) -> str | None:
    """The passage sentence that states the right answer literally, or None (yes/no, paraphrased answers)."""
    if row.right_answer.lower() in ("yes", "no") or len(row.right_answer) < 2:
        return None
    for sentence in sentences(row.paragraph):
        if row.right_answer.lower() in sentence.lower():
            return sentence
    return None


def text_document(paragraphs: Sequence[str]) -> bytes:
    """A text corpus file: paragraphs separated by one blank line, ending with a newline."""
    return ("\n\n".join(paragraphs) + "\n").encode("utf-8")


class DatasetBuilder:
    """Accumulates corpus files, manifest corpus entries and items, in the order they are added."""

    def __init__(self, version: str) -> None:
        self.version = version
        """The dataset version written into the manifest (docs/dataset.md: each dataset has its own)."""
        self.files: dict[str, bytes] = {}
        self.corpus: list[dict[str, str]] = []
        self.items: list[dict[str, Any]] = []

    def add_document(self, file: str, name: str, label: str, fmt: str, content: bytes) -> None:
        """Add one corpus file under ``corpus/`` with its manifest entry."""
        if file in self.files:
            raise BuildError(f"corpus file {file} produced twice")
        self.files[file] = content
        self.corpus.append({"name": name, "label": label, "file": file, "format": fmt})

    def manifest(self) -> dict[str, Any]:
        """The manifest v1 (docs/dataset.md) with xxh3_64 hashes of the raw corpus bytes."""
        ids = [item["id"] for item in self.items]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise BuildError(f"duplicate item ids: {duplicates}")
        return {
            "version": self.version,
            "corpus": self.corpus,
            "corpusHashes": {file: xxhash.xxh3_64_hexdigest(content) for file, content in self.files.items()},
            "items": self.items,
        }


def _chunks(rows: Sequence[T], size: int) -> list[list[T]]:
    """Consecutive groups of ``size`` (the last may be shorter), in order."""
    return [list(rows[i : i + size]) for i in range(0, len(rows), size)]


def restated(row: HaluRow) -> str | None:
    """The row's answer sentence with its parentheticals deleted, or None when that changes nothing.

    Deleting a parenthetical ("Arthur's Magazine (1844–1846) was …" → "Arthur's
    Magazine was …") keeps what the sentence asserts, so the result is a
    faithful restatement of the passage that a verifier must keep ``supported``
    (docs/target-contract.md). Kept only when it still states the right answer, is one sentence
    with at least ``MIN_CONTENT_WORDS`` content words, and loses no negation.
    """
    sentence = answer_sentence(row)
    if sentence is None:
        return None
    shorter = _SPACE.sub(" ", _PARENTHETICAL.sub("", sentence)).strip()
    shorter = re.sub(r"\s+([,.;:])", r"\1", shorter)
    if (
        shorter == sentence
        or row.right_answer.lower() not in shorter.lower()
        or len(claim_sentences(shorter)) != 1
        or len(set(content_tokens(shorter))) < MIN_CONTENT_WORDS
        or _negation_keys(shorter) != _negation_keys(sentence)
    ):
        return None
    return shorter


def _negation_keys(text: str) -> set[str]:
    return {key for key in map(negation_key, tokenize(text)) if key is not None}


def false_draft(row: HaluRow, paragraphs: Sequence[str]) -> str | None:
    """A qa draft of the row's answer sentence (true, uncited) then its hallucinated answer (false, cited).

    The mock attaches ``[S1]`` to the last sentence only, so the cited claim is
    the hallucination. Kept only when the hallucination is a fair falsehood
    (rejectable against every passage of the label) **and** not true by the
    docs/scoring.md rule against any of them: a claim the harness counts as true would
    not lower claim-support precision when supported, so it would measure nothing.
    """
    sentence = answer_sentence(row)
    falsehood = as_sentence(row.hallucinated)
    if sentence is None or not fair_falsehood(falsehood, paragraphs) or claim_is_true(falsehood, paragraphs):
        return None
    draft = f"{sentence} {falsehood}"
    return draft if claim_sentences(draft) == [sentence, falsehood] else None


def add_halueval(builder: DatasetBuilder, rows: Sequence[HaluRow]) -> None:
    """qa labels first (rows whose passage states the answer), then adversarial labels from the rows after.

    Each qa question item's truths are every paragraph under its label, whole:
    the mock generator echoes the two best chunks, and the second is usually a
    neighbouring row's passage, which is just as true. Each qa row may also give
    two planted drafts (``ECHO-CITED:``, tag ``draft``): a restatement of its
    answer sentence (``restatement``, true and cited: claim-support recall) and
    its answer sentence followed by its hallucinated answer (``false_cited``:
    claim-support precision). A draft's answer is the draft alone, so its
    truths are the row's own passage.
    """
    qa_rows = [r for r in rows if answer_sentence(r) is not None][:QA_HALUEVAL]
    if len(qa_rows) < QA_HALUEVAL:
        raise BuildError(f"{HALUEVAL_FILE}: only {len(qa_rows)} rows state their answer; need {QA_HALUEVAL}")
    drafts: list[dict[str, Any]] = []
    for number, group in enumerate(_chunks(qa_rows, QA_ROWS_PER_LABEL), start=1):
        label = f"HALUEVAL_QA_{number:02d}"
        paragraphs = list(dict.fromkeys(r.paragraph for r in group))
        builder.add_document(
            f"halueval-qa-{number:02d}.txt", f"halueval/qa-{number:02d}.txt", label, "text", text_document(paragraphs)
        )
        for row in group:
            builder.items.append(
                {
                    "id": f"qa-halueval-{row.index:04d}",
                    "kind": "qa",
                    "question": row.question,
                    "find": label,
                    "expectedEvidence": [answer_sentence(row)],
                    "truths": paragraphs,
                    "tags": ["halueval"],
                }
            )
            restatement = restated(row)
            if restatement is not None:
                drafts.append(
                    _draft(
                        f"qa-halueval-{row.index:04d}-restated",
                        restatement,
                        label,
                        [row.paragraph],
                        ["halueval", "draft", "restatement"],
                    )
                )
            draft = false_draft(row, paragraphs)
            if draft is not None:
                drafts.append(
                    _draft(
                        f"qa-halueval-{row.index:04d}-false",
                        draft,
                        label,
                        [row.paragraph],
                        ["halueval", "draft", "false_cited"],
                    )
                )
    builder.items.extend(drafts)

    rest = [r for r in rows if r.index > qa_rows[-1].index]
    kept = 0
    for number, group in enumerate(_chunks(rest, ROWS_PER_LABEL), start=1):
        if kept >= ADV_HALUEVAL:
            break
        label = f"HALUEVAL_ADV_{number:02d}"
        paragraphs = list(dict.fromkeys(r.paragraph for r in group))
        builder.add_document(
            f"halueval-adv-{number:02d}.txt", f"halueval/adv-{number:02d}.txt", label, "text", text_document(paragraphs)
        )
        for row in group:
            falsehood = as_sentence(row.hallucinated)
            if kept >= ADV_HALUEVAL or not fair_falsehood(falsehood, paragraphs):
                continue
            cited = kept % 2 == 1
            builder.items.append(
                {
                    "id": f"adv-halueval-{row.index:04d}",
                    "kind": "adversarial",
                    "question": ("ECHO-CITED: " if cited else "ECHO: ") + falsehood,
                    "find": label,
                    "tags": ["halueval", "echo_cited" if cited else "echo"],
                }
            )
            kept += 1
    if kept < ADV_HALUEVAL:
        raise BuildError(f"{HALUEVAL_FILE}: only {kept} fair hallucinated answers; need {ADV_HALUEVAL}")


def _draft(item_id: str, draft: str, label: str, truths: Sequence[str], tags: list[str]) -> dict[str, Any]:
    """A qa item whose answer is the planted ``draft`` (``ECHO-CITED:``: its last sentence cited ``[S1]``).

    It expects no evidence: the draft, not a question, is the retrieval query,
    so it would only measure how well a sentence finds itself.
    """
    return {
        "id": item_id,
        "kind": "qa",
        "question": f"ECHO-CITED: {draft}",
        "find": label,
        "expectedEvidence": [],
        "truths": list(truths),
        "tags": tags,
    }


# --------------------------------------------------------------------------- TruthfulQA


def correct_answers(question: dict[str, Any]) -> list[str]:
    """A question's correct answers usable as evidence: refusals and empty strings dropped, deduplicated."""
    answers = [as_sentence(a) for a in question["correct_answers"] if a.strip() and not NO_ANSWER.search(a.strip())]
    return list(dict.fromkeys(answers))


def near_miss(falsehood: str, correct: Sequence[str]) -> bool:
    """Whether an incorrect answer shares most of its words with a correct one (coverage ≥ 0.6, docs/scoring.md)."""
    return any(claim_coverage(falsehood, c) >= COVERAGE_THRESHOLD for c in correct)


def restates(answer: str, other: str) -> bool:
    """Whether ``answer`` restates ``other`` in its words: a lexical paraphrase a verifier can ground.

    ``other`` must make ``answer`` true by the docs/scoring.md rule (coverage ≥ 0.6,
    numbers and negations kept), carry the same negations (so "nothing will
    happen" is not restated by "the umbrella will open"), and account, up to
    inflection (``_shares_stem``), for every content word of what ``answer``
    says after the words the two share at the start. TruthfulQA's answers to
    one question often repeat the question ("If you open an umbrella indoors,
    …"); only the rest is what each asserts, so the comparison starts where
    they part. An answer that brings in a word of its own ("… will be excreted"
    against "… pass through your digestive system") is not a restatement,
    however true.
    """
    if not claim_is_true(answer, [other]) or _negation_keys(other) != _negation_keys(answer):
        return False
    mine, theirs = tokenize(answer), tokenize(other)
    shared = 0
    for a, b in zip(mine, theirs):
        if a != b:
            break
        shared += 1
    rest_of_other = set(theirs[shared:])
    return all(_shares_stem(t, rest_of_other) for t in mine[shared:] if t not in STOP_WORDS and not is_number_token(t))


def _statement(text: str) -> bool:
    """One sentence with at least ``MIN_CONTENT_WORDS`` content words (what a draft or a falsehood must be)."""
    return len(claim_sentences(text)) == 1 and len(set(content_tokens(text))) >= MIN_CONTENT_WORDS


def held_out_answer(correct: Sequence[str]) -> tuple[str, bool] | None:
    """The correct answer kept out of the corpus to be planted as a paraphrase draft, and whether it restates.

    The first statement that restates another correct answer of the question
    (then it goes to v1), else the last statement (then it goes to the hard
    dataset); None when the question has fewer than two correct answers or no
    statement among them (a question keeps at least one answer in the corpus).
    """
    if len(correct) < 2:
        return None
    statements = [a for a in correct if _statement(a)]
    for answer in statements:
        if any(restates(answer, other) for other in correct if other != answer):
            return answer, True
    return (statements[-1], False) if statements else None


def drops_negation(falsehood: str, correct: Sequence[str]) -> bool:
    """Whether an incorrect answer is a correct one with its negation dropped.

    Some correct answer covers ≥ 0.6 of its tokens and carries a negation it
    lacks ("You digest the watermelon seeds" against "You will not digest the
    watermelon seeds"). docs/scoring.md's guard looks for the claim's negations in the
    truth, not the truth's in the claim, so these count as *true* by the
    scoring rule and only an adversarial item can measure them.
    """
    negations = _negation_keys(falsehood)
    return any(claim_coverage(falsehood, c) >= COVERAGE_THRESHOLD and _negation_keys(c) - negations for c in correct)


@dataclass
class TruthfulQaPlan:
    """What one TruthfulQA question contributes: corpus answers, a held-out paraphrase, falsehoods."""

    question: dict[str, Any]
    correct: list[str]
    """Every usable correct answer (the truths of its drafts)."""
    in_corpus: list[str]
    """The correct answers stored as records (all but the held-out one)."""
    held_out: tuple[str, bool] | None


def plan_question(question: dict[str, Any]) -> TruthfulQaPlan:
    """Split a question's correct answers into corpus records and a held-out paraphrase draft."""
    correct = correct_answers(question)
    held_out = held_out_answer(correct)
    in_corpus = [a for a in correct if held_out is None or a != held_out[0]]
    return TruthfulQaPlan(question, correct, in_corpus, held_out)


def add_truthfulqa(
    builder: DatasetBuilder, hard: DatasetBuilder, lang: str, questions: Sequence[dict[str, Any]]
) -> dict[int, tuple[str, list[str]]]:
    """JSON documents of correct answers, eight questions to a label; planted falsehoods and drafts per question.

    Returns the questions placed under a label: TruthfulQA ``id`` → (label,
    the answers stored as its records), for ``add_role_swaps``.

    Adversarial (v1): the question's first fair incorrect answer that is a near
    miss, else its first fair one. Near misses are always ``ECHO-CITED`` (the
    hard case: the cited span is probably the correct answer it echoes); the
    others alternate between ``ECHO`` and ``ECHO-CITED``.

    qa drafts (``ECHO-CITED:``, truths: all the question's correct answers):
    the held-out correct answer (``paraphrase``; to v1 when it restates a
    corpus answer of its question, else to ``hard`` with ``new_words``), and the
    next fair incorrect answer that is not true by docs/scoring.md against any chunk of
    the label or correct answer (``false_cited``, v1).

    Adversarial (hard): the question's first incorrect answer that is a
    statement but *not* fair — its words are all in some chunk of the label —
    always ``ECHO-CITED``, tagged ``dropped_negation`` or ``word_overlap``.
    """
    language = {"en": "english", "es": "spanish"}[lang]
    plans = [plan_question(q) for q in questions[TRUTHFULQA_FIRST_QUESTION[lang] :]]
    usable = [p for p in plans if p.in_corpus]
    kept = 0
    plain = 0
    planted: set[str] = set()  # TruthfulQA repeats stock wrong answers ("Su nombre es Elon Musk")
    hard_planted: set[str] = set()
    drafts: list[dict[str, Any]] = []
    placed: dict[int, tuple[str, list[str]]] = {}
    for number, group in enumerate(_chunks(usable, ROWS_PER_LABEL), start=1):
        if kept >= ADV_TRUTHFULQA[lang]:
            break
        label = f"TRUTHFULQA_{lang.upper()}_{number:02d}"
        placed.update((int(p.question["id"]), (label, p.in_corpus)) for p in group)
        records = [{"answer": a} for p in group for a in p.in_corpus]
        spans = [canonical_record(r) for r in records]
        document = (
            f"truthfulqa-{lang}-{number:02d}.json",
            f"truthfulqa/{lang}-{number:02d}.json",
            label,
            "json",
            dumps(records),
        )
        builder.add_document(*document)
        hard.add_document(*document)
        for plan in group:
            qid = f"tqa-{lang}-{int(plan.question['id']):04d}"
            incorrect = [f for f in map(as_sentence, plan.question["incorrect_answers"]) if f != "."]
            fair = [f for f in incorrect if normalize_text(f) not in planted and fair_falsehood(f, spans)]
            planted_here = None
            if fair and kept < ADV_TRUTHFULQA[lang]:
                misses = [f for f in fair if near_miss(f, plan.correct)]
                planted_here = (misses or fair)[0]
                planted.add(normalize_text(planted_here))
                if misses:
                    cited = True
                else:
                    cited = plain % 2 == 1
                    plain += 1
                tags = ["truthfulqa", language, "echo_cited" if cited else "echo"] + (["near_miss"] if misses else [])
                builder.items.append(
                    {
                        "id": f"adv-{qid}",
                        "kind": "adversarial",
                        "question": ("ECHO-CITED: " if cited else "ECHO: ") + planted_here,
                        "find": label,
                        "tags": tags,
                    }
                )
                kept += 1
            if plan.held_out is not None:
                answer, restatement = plan.held_out
                target = drafts if restatement else hard.items
                tags = ["truthfulqa", language, "draft", "paraphrase"] + ([] if restatement else ["new_words"])
                target.append(_draft(f"qa-{qid}-paraphrase", answer, label, plan.correct, tags))
            everything = spans + plan.correct
            for falsehood in fair:
                if falsehood != planted_here and not claim_is_true(falsehood, everything):
                    drafts.append(
                        _draft(
                            f"qa-{qid}-false",
                            falsehood,
                            label,
                            plan.correct,
                            ["truthfulqa", language, "draft", "false_cited"],
                        )
                    )
                    break
            correct_keys = {normalize_text(c) for c in plan.correct}
            for number_in_source, raw in enumerate(plan.question["incorrect_answers"], start=1):
                falsehood = as_sentence(raw)
                key = normalize_text(falsehood)
                if (
                    not _statement(falsehood)
                    or key in hard_planted
                    or key in correct_keys
                    or fair_falsehood(falsehood, spans)
                ):
                    continue
                hard_planted.add(key)
                why = "dropped_negation" if drops_negation(falsehood, plan.correct) else "word_overlap"
                hard.items.append(
                    {
                        "id": f"adv-{qid}-incorrect-{number_in_source}",
                        "kind": "adversarial",
                        "question": f"ECHO-CITED: {falsehood}",
                        "find": label,
                        "tags": ["truthfulqa", language, "echo_cited", why],
                    }
                )
    builder.items.extend(drafts)
    if kept < ADV_TRUTHFULQA[lang]:
        raise BuildError(f"{TRUTHFULQA_FILES[lang]}: only {kept} fair incorrect answers; need {ADV_TRUTHFULQA[lang]}")
    return placed


# --------------------------------------------------------------------------- role swaps


_CAPITAL = r"[A-ZÁÉÍÓÚÑ][\w'.-]*"
_ARTICLE = r"(?:(?:the|The|el|El|la|La|los|Los|las|Las) )?"
_NAME = {
    "en": rf"{_ARTICLE}{_CAPITAL}(?: (?:of|and) {_CAPITAL}| {_CAPITAL})*",
    "es": rf"{_ARTICLE}{_CAPITAL}(?: (?:de|del|y|e) {_CAPITAL}| {_CAPITAL}| azteca)*",
}
"""A name: capitalised words, joined by "of"/"and" ("de"/"y"), after an optional article ("the UK", "el Reino Unido")."""
_COMPARATIVE = {
    "en": re.compile(r"\b(?:more|less|fewer|[a-z]{3,}er)\b"),
    "es": re.compile(r"\b(?:más|menos|mayor|menor|mejor|peor|antes|después)\b"),
}
"""A comparative ("more", "colder"; "más", "antes"): what makes the relation between the two names one-way."""
_THAN = {"en": r"(?:than|before|after)", "es": r"que"}
_SUBJECT_SWAP = {
    lang: re.compile(
        rf"^(?P<x>{_NAME[lang]}) (?P<rel>[a-záéíóúñ][^,()]*?) (?P<than>{_THAN[lang]}) "
        rf"(?P<y>{_NAME[lang]}|(?:the |a )?[a-z]+)(?P<tail> in [a-z]+)?\.$"
    )
    for lang in ("en", "es")
}
"""``X <relation> than Y`` / ``X <relación> que Y``: the subject and the compared name trade places."""
_PLACE_SWAP = {
    "en": re.compile(
        rf"^(?P<pre>[A-Z][^,()]*? in )(?P<x>{_NAME['en']})(?P<rel>(?: [^,()]*?)?) than in "
        rf"(?P<y>{_NAME['en']})(?P<tail> in [a-z]+)?\.$"
    ),
    "es": re.compile(
        rf"^(?P<pre>(?:[A-ZÁÉÍÓÚÑ][^()]*? )?[Ee]n )(?P<x>{_NAME['es']})(?P<rel>(?: [^,()]*?)?) que en "
        rf"(?P<y>{_NAME['es']})(?P<tail>)\.$"
    ),
}
"""``… in X … than in Y`` / ``En X … que en Y``: the two places trade places (the verb agrees with neither)."""
_NOT_A_NAME = frozenset(
    {"in", "by", "no", "very", "there", "nothing", "some", "people", "countries", "you", "we", "they", "it",
     "the", "a", "an", "en", "muy", "hay", "el", "la", "los", "las"}
)  # fmt: skip
"""Capitalised sentence openers that are not names ("In China they …", "No US state …", "You can …",
an article before a lower-case word: "The weather …")."""
_REPLY = re.compile(r"^(?:yes|no|sí)\b", re.IGNORECASE)
"""An answer that opens with a reply to its question ("No, la gente es más rica …") is not a standalone statement."""
_HEDGE = re.compile(
    r"\b(?:might|may|could|probably|possibly|podría|podrían|puede|pueden|quizás?|probablemente)\b", re.IGNORECASE
)
"""A hedged comparison ("Mississippi might have higher obesity …") is not clearly false once swapped."""
_CONJUNCTION = re.compile(r"\b(?:and|y|e)\b|,")
DROPPED_SWAPS = {
    "adv-tqa-en-0154-swap-2": "'The Big Bang were formed after Stars.': ungrammatical, reads as nonsense",
    "adv-tqa-en-0444-swap-6": "'The US consumes way more seafood than Portugal.': true in total; the question is per person",
    "adv-tqa-es-0444-swap-5": "'Estados Unidos consume mucho más marisco que Portugal.': likewise",
}
"""Swaps the rules make that a reading by eye found not clearly false (issue 19): item id → why."""
ROLE_SWAPS_MIN = {"en": 25, "es": 25}
"""The build fails when a language yields fewer role swaps than this (issue 19 asks for 60 or more in all)."""


def _moved(name: str, to_start: bool) -> str:
    """``name`` as it reads in its new place: an initial singular article lower-cased mid-sentence, a capital at the start.

    Only "The", "El" and "La" are lowered: "Los Ángeles" and "Las Vegas" are names.
    """
    if to_start:
        return name[:1].upper() + name[1:]
    return re.sub(r"^(The|El|La) (?=[A-ZÁÉÍÓÚÑ])", lambda m: m.group(1).lower() + " ", name)


def role_swap(sentence: str, lang: str) -> str | None:
    """The sentence with the two names of a one-way comparison exchanged, or None when it has no such shape.

    Two shapes (the same words, the opposite meaning):

    * subject swap: ``X <relation> than|before|after Y`` (``X <relación> que Y``),
      the relation holding a comparative (``_COMPARATIVE``): "Hares can run
      faster than tortoises." → "Tortoises can run faster than hares." Both X
      and Y are one name or one word, with no "and"/"y" (a plural subject would
      break the verb's agreement), and X is a name, not an opener ("In China
      they …");
    * place swap: ``… in X … than in Y`` (``En X … que en Y``): "En Londres
      llueve mucho más que en Phoenix." → "En Phoenix llueve mucho más que en
      Londres." The verb agrees with neither, so lists of places may move.

    Hedged sentences ("might", "podría", …) are left alone: their swap is not
    clearly false.
    """
    if _HEDGE.search(sentence) or _REPLY.match(sentence):
        return None
    place = _PLACE_SWAP[lang].match(sentence)
    if (
        place
        and _COMPARATIVE[lang].search(place["pre"] + place["rel"])
        and not _CONJUNCTION.match(place["rel"].strip())
    ):
        pre, x, y = place["pre"], place["x"], place["y"]
        between = "than in" if lang == "en" else "que en"
        return f"{pre}{_moved(y, False)}{place['rel']} {between} {_moved(x, False)}{place['tail'] or ''}."
    subject = _SUBJECT_SWAP[lang].match(sentence)
    if subject is None:
        return None
    x, y, rel = subject["x"], subject["y"], subject["rel"]
    if (
        (x.split()[0].lower() in _NOT_A_NAME and not re.match(r"(?:the|el|la|los|las) [A-ZÁÉÍÓÚÑ]", x, re.IGNORECASE))
        or (subject["than"] in ("before", "after") and not y[:1].isupper() and not re.match(r"the [A-Z]", y))
        or _CONJUNCTION.search(x)
        or _CONJUNCTION.search(y)
        or (subject["than"] in ("than", "que") and not _COMPARATIVE[lang].search(rel))
    ):
        return None
    if y[:1].islower() and not re.match(r"(?:the|el|la|los|las) [A-ZÁÉÍÓÚÑ]", y):
        x = x[:1].lower() + x[1:]  # a common noun ("Hares … than tortoises"): no capital once moved
    return f"{_moved(y, True)} {rel} {subject['than']} {_moved(x, False)}{subject['tail'] or ''}."


def _in_order(claim: str, chunk: str) -> bool:
    """Whether the chunk holds the claim's content words in the claim's order (a subsequence of its tokens)."""
    chunk_tokens = iter(tokenize(chunk))
    return all(token in chunk_tokens for token in content_tokens(claim))


def add_role_swaps(
    builder: DatasetBuilder,
    hard: DatasetBuilder,
    lang: str,
    questions: Sequence[dict[str, Any]],
    placed: dict[int, tuple[str, list[str]]],
) -> None:
    """Role-swap falsehoods (``role_swap``) of TruthfulQA correct answers, cited as ``ECHO-CITED`` items.

    Questions are read in source order from the language's first question
    (``TRUTHFULQA_FIRST_QUESTION``), wrapping round to the start of the file.
    A question already under a v1 label (``placed``: question index → label
    and its corpus answers) swaps its corpus answers there; any other question
    with a swap gets its correct answers (``correct_answers``) stored as JSON
    records under a role-swap label, eight questions to a label
    (``TRUTHFULQA_EN_SWAP_01`` …), so every swap is cited against the sentence
    it was made from. A swap is kept when it is one statement, no chunk of its
    label holds its content words in its order (no answer says the swapped
    comparison), and it is not planted already, in v1 or in ``hard`` (which
    plants the incorrect answers whose words a chunk carries: TruthfulQA lists
    some swaps among a question's incorrect answers).
    """
    language = {"en": "english", "es": "spanish"}[lang]
    start = TRUTHFULQA_FIRST_QUESTION[lang]
    order = list(range(start, len(questions))) + list(range(start))
    swaps: list[tuple[int, str, list[str], list[tuple[int, str]]]] = []  # index, label, answers, (answer number, swap)
    planted = {
        normalize_text(i["question"].split(": ", 1)[1])
        for i in [*builder.items, *hard.items]
        if i["kind"] == "adversarial"
    }
    for index in order:
        label, answers = placed.get(int(questions[index]["id"]), (None, correct_answers(questions[index])))
        found = []
        qid = f"tqa-{lang}-{int(questions[index]['id']):04d}"
        for number, answer in enumerate(answers, start=1):
            if f"adv-{qid}-swap-{number}" in DROPPED_SWAPS:
                continue
            swap = role_swap(answer, lang)
            if swap is None or not _statement(swap) or sorted(tokenize(swap)) != sorted(tokenize(answer)):
                continue
            if any(_in_order(swap, other) for other in answers) or normalize_text(swap) in planted:
                continue
            planted.add(normalize_text(swap))
            found.append((number, swap))
        if found:
            swaps.append((index, label or "", answers, found))
    new_questions = [s for s in swaps if not s[1]]
    labels: dict[int, str] = {}
    for number, group in enumerate(_chunks(new_questions, ROWS_PER_LABEL), start=1):
        label = f"TRUTHFULQA_{lang.upper()}_SWAP_{number:02d}"
        records = [{"answer": a} for _, _, answers, _ in group for a in answers]
        builder.add_document(
            f"truthfulqa-{lang}-swap-{number:02d}.json",
            f"truthfulqa/{lang}-swap-{number:02d}.json",
            label,
            "json",
            dumps(records),
        )
        labels.update((index, label) for index, *_ in group)
    kept = 0
    for index, label, _, found in swaps:
        qid = f"tqa-{lang}-{int(questions[index]['id']):04d}"
        for number, swap in found:
            builder.items.append(
                {
                    "id": f"adv-{qid}-swap-{number}",
                    "kind": "adversarial",
                    "question": f"ECHO-CITED: {swap}",
                    "find": label or labels[index],
                    "tags": ["truthfulqa", language, "echo_cited", "role_swap"],
                }
            )
            kept += 1
    if kept < ROLE_SWAPS_MIN[lang]:
        raise BuildError(f"{TRUTHFULQA_FILES[lang]}: only {kept} role swaps; need {ROLE_SWAPS_MIN[lang]}")


# --------------------------------------------------------------------------- TimeQA


@dataclass(frozen=True)
class Fact:
    """One time-bound fact: a value valid in ``[start, end)`` (RFC 3339, UTC midnight)."""

    value: str
    start: str
    end: str

    def midpoint(self) -> str:
        """An instant well inside the interval (noon UTC of its middle day): never on a boundary."""
        a = datetime.fromisoformat(self.start.replace("Z", "+00:00"))
        b = datetime.fromisoformat(self.end.replace("Z", "+00:00"))
        middle = a + (b - a) / 2
        return (middle.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(hours=12)).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )

    def covers(self, instant: str) -> bool:
        """Whether ``instant`` lies in ``[start, end)`` (same-format UTC strings compare as instants)."""
        return self.start <= instant < self.end


def _month(name: str | None) -> int:
    return _MONTHS.index(name[:3].lower()) + 1 if name else 1


def period(question: str) -> tuple[str, str] | None:
    """The valid interval a TimeQA question asks about, or None when it names no parseable period.

    ``from [Mon] Y1 to [Mon] Y2`` gives ``[Y1-Mon-01, Y2-Mon-01)`` (a bare year
    means January); when that would be empty (``from 2005 to 2005``) the end is
    the next January. ``in [Mon] Y`` gives that month, or that year.
    """
    match = _PERIOD.search(question)
    if match:
        m1, y1, m2, y2 = match.groups()
        start = (int(y1), _month(m1))
        end = (int(y2), _month(m2))
        if end <= start:
            end = (start[0] + 1, 1) if not m2 else (end[0], end[1])
        if end <= start:
            return None
    else:
        single = _SINGLE.search(question)
        if not single:
            return None
        month, year = single.groups()
        start = (int(year), _month(month))
        end = (start[0], start[1] + 1) if month else (start[0] + 1, 1)
        if end[1] == 13:
            end = (end[0] + 1, 1)
    return f"{start[0]:04d}-{start[1]:02d}-01T00:00:00Z", f"{end[0]:04d}-{end[1]:02d}-01T00:00:00Z"


def clean_value(answer: str) -> str:
    """TimeQA answers are whitespace-tokenised ("Arizona , Tucson"); rejoin the punctuation."""
    text = re.sub(r"\s+([,.;:)])", r"\1", answer.strip())
    return re.sub(r"\(\s+", "(", text)


def entity_facts(entity: dict[str, Any]) -> list[Fact]:
    """Distinct facts of one TimeQA entity, ordered by start, skipping unanswered or undated questions."""
    facts: dict[tuple[str, str, str], Fact] = {}
    for question, answers in entity["questions"]:
        interval = period(question)
        values = [clean_value(a["answer"]) for a in answers if a["answer"].strip()]
        if interval is None or not values:
            continue
        fact = Fact(values[0], *interval)
        facts.setdefault((fact.start, fact.end, fact.value), fact)
    return sorted(facts.values(), key=lambda f: (f.start, f.end, f.value))


def _valid(fact: Fact) -> dict[str, str]:
    return {"start": fact.start, "end": fact.end}


def _expected(facts: Sequence[Fact], instant: str, entity: str, relation: str) -> dict[str, Any]:
    visible = [f for f in facts if f.covers(instant)]
    return {
        "count": len(visible),
        "records": [{"properties": {"entity": entity, "relation": relation, "value": f.value}} for f in visible],
    }


def _year_before(fact: Fact) -> str:
    """Noon on 1 July of the year before ``fact`` starts: an instant before the entity's first fact."""
    return f"{int(fact.start[:4]) - 1:04d}-07-01T12:00:00Z"


def _shifted(fact: Fact) -> Fact:
    """The same value with its validity recorded a year late (a synthetic data-entry mistake)."""

    def later(instant: str) -> str:
        return f"{int(instant[:4]) + 1:04d}{instant[4:]}"

    return Fact(fact.value, later(fact.start), later(fact.end))


def temporal_items(
    entity: dict[str, Any], facts: Sequence[Fact], entity_slug: str, variant: int
) -> list[dict[str, Any]]:
    """Four items over one entity's history, sharing one setup with a synthetic correction.

    Setup: every fact is created (``f1``…), except the middle one, which is first
    recorded wrong (``wrong``) and then corrected by an ``update`` (``fix``).
    The mistake is a neighbouring fact's value (even ``variant``) or the right
    value with its validity a year late (odd ``variant``). Probes: (1) now, as
    of a valid time (the first fact, the last fact, or before any fact: count
    0, by ``variant``); (2) as of the ``wrong`` transaction, what was believed
    then; (3) as of the ``fix`` transaction, the corrected history; (4) compare
    ``wrong`` → ``fix``: exactly one record changed.

    Expected counts and records are computed from the same facts with the
    visibility rule of docs/dataset.md, docs/target-contract.md (half-open ``[start, end)`` intervals), and
    every probe instant is noon UTC, never on an interval boundary.
    """
    name = entity["paras"][0].strip() if entity.get("paras") else entity["link"].rsplit("/", 1)[-1]
    relation = WIKIDATA_RELATIONS[entity["type"]]
    label = slug(relation).upper().replace("-", "_")
    k = len(facts) // 2
    if variant % 2 == 0:
        wrong_value = facts[k + 1].value if facts[k + 1].value != facts[k].value else facts[k - 1].value
        mistaken = Fact(wrong_value, facts[k].start, facts[k].end)
        mistake_tag = "wrong_value"
    else:
        mistaken = _shifted(facts[k])
        mistake_tag = "wrong_valid_time"

    def props(value: str) -> dict[str, str]:
        return {"entity": name, "relation": relation, "value": value}

    setup: list[dict[str, Any]] = [
        {"op": "create", "save": f"f{i + 1}", "label": label, "properties": props(f.value), "validTime": _valid(f)}
        for i, f in enumerate(facts)
        if i != k
    ]
    setup.append(
        {
            "op": "create",
            "save": "wrong",
            "label": label,
            "properties": props(mistaken.value),
            "validTime": _valid(mistaken),
        }
    )
    setup.append(
        {
            "op": "update",
            "save": "fix",
            "target": "$id:wrong",
            "label": label,
            "properties": props(facts[k].value),
            "validTime": _valid(facts[k]),
        }
    )
    believed = [mistaken if i == k else f for i, f in enumerate(facts)]
    now_at = [facts[0].midpoint(), facts[-1].midpoint(), _year_before(facts[0])][variant % 3]
    at_k = facts[k].midpoint()
    probes = [
        (["valid_time"], {"call": "query", "label": label, "asOfValid": now_at},
         _expected(facts, now_at, name, relation)),
        (["as_of_tx", "correction", mistake_tag],
         {"call": "query", "label": label, "asOfTx": "$tx:wrong", "asOfValid": at_k},
         _expected(believed, at_k, name, relation)),
        (["as_of_tx", "correction", mistake_tag],
         {"call": "query", "label": label, "asOfTx": "$tx:fix", "asOfValid": at_k},
         _expected(facts, at_k, name, relation)),
        (["compare", "correction", mistake_tag],
         {"call": "compare", "label": label, "fromTx": "$tx:wrong", "toTx": "$tx:fix"},
         {"added": 0, "removed": 0, "changed": 1}),
    ]  # fmt: skip
    return [
        {
            "id": f"tmp-timeqa-{entity_slug}-{n}",
            "kind": "temporal",
            "setup": setup,
            "probe": probe,
            "expect": expect,
            "tags": ["timeqa", *tags],
        }
        for n, (tags, probe, expect) in enumerate(probes, start=1)
    ]


def add_timeqa(builder: DatasetBuilder, entities: Sequence[dict[str, Any]]) -> None:
    """Temporal items from the first entities with at least ``MIN_FACTS`` distinct dated facts."""
    used = 0
    slugs: set[str] = set()
    for entity in entities:
        if used >= TEMPORAL_ENTITIES:
            break
        if entity.get("type") not in WIKIDATA_RELATIONS:
            continue
        facts = entity_facts(entity)
        if len(facts) < MIN_FACTS or len({f.value for f in facts}) < 2:
            continue
        entity_slug = slug(entity["link"].rsplit("/", 1)[-1])
        if entity_slug in slugs:
            entity_slug = f"{entity_slug}-{entity['type'].lower()}"
        slugs.add(entity_slug)
        builder.items.extend(temporal_items(entity, facts, entity_slug, used))
        used += 1
    if used < TEMPORAL_ENTITIES:
        raise BuildError(f"{TIMEQA_FILE}: only {used} entities with {MIN_FACTS}+ dated facts")


# --------------------------------------------------------------------------- build


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BuildError(f"{path}: {exc}") from exc


def build_datasets(data: Path) -> dict[str, dict[str, bytes]]:
    """Build v1 and the hard dataset in memory, in one pass (they split the same sources).

    Args:
        data: The shared data directory (holding ``halueval/``, ``truthfulqa-multi/``, ``timeqa/``).

    Returns:
        ``{"v1": files, "hard": files}``; each maps a relative output path (POSIX,
        e.g. ``corpus/halueval-qa-01.txt``) to its bytes, including
        ``manifest.json`` and ``licenses/*``. READMEs are written by hand.

    Raises:
        BuildError: a source file is missing, malformed, or yields too few items.
    """
    v1, hard = DatasetBuilder("v1.1"), DatasetBuilder("hard-1")
    add_halueval(v1, read_halueval(data / HALUEVAL_FILE))
    for lang, file in TRUTHFULQA_FILES.items():
        questions = _load_json(data / file)
        placed = add_truthfulqa(v1, hard, lang, questions)
        add_role_swaps(v1, hard, lang, questions, placed)
    add_timeqa(v1, _load_json(data / TIMEQA_FILE))
    return {
        "v1": _files(v1, data, LICENSES),
        "hard": _files(hard, data, {k: v for k, v in LICENSES.items() if k.startswith("truthfulqa")}),
    }


def _files(builder: DatasetBuilder, data: Path, licenses: dict[str, str]) -> dict[str, bytes]:
    out = {"manifest.json": dumps(builder.manifest())}
    out.update({f"corpus/{file}": content for file, content in builder.files.items()})
    for target, source in licenses.items():
        try:
            out[f"licenses/{target}"] = (data / source).read_bytes()
        except OSError as exc:
            raise BuildError(f"{data / source}: {exc}") from exc
    return out


def build(data: Path) -> dict[str, bytes]:
    """The files of ``datasets/v1`` (see ``build_datasets``)."""
    return build_datasets(data)["v1"]


def build_hard(data: Path) -> dict[str, bytes]:
    """The files of ``datasets/hard`` (see ``build_datasets``)."""
    return build_datasets(data)["hard"]


def write(files: dict[str, bytes], out: Path) -> None:
    """Write the files under ``out``, removing stale files in the generated folders (``corpus/``, ``licenses/``)."""
    for folder in ("corpus", "licenses"):
        directory = out / folder
        if directory.is_dir():
            for stale in directory.iterdir():
                if stale.is_file() and f"{folder}/{stale.name}" not in files:
                    stale.unlink()
    for relative, content in files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


def trim_baseline(path: Path) -> None:
    """Empty every item's drill-down (``extra``) in a report written by ``--eval-report``, in place.

    A baseline needs the items' figures, not their question, answer, claims and
    evidence texts (docs/ci.md, "The HTML report"), which are most of its bytes;
    no figure depends on them. The line layout of the streamed report (one item
    per line) is kept, so re-recording gives a readable diff.

    Raises:
        BuildError: the file cannot be read or an item line is not JSON (names the line).
    """
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise BuildError(f"{path}: {exc}") from exc
    out = lines[:1]
    for number, line in enumerate(lines[1:], start=2):
        if line.startswith('{"id"'):
            try:
                item = json.loads(line.removesuffix(","))
            except ValueError as exc:
                raise BuildError(f"{path}: line {number}: {exc}") from exc
            line = (
                json.dumps({**item, "extra": {}}, ensure_ascii=False, allow_nan=False) + line[len(line.rstrip(",")) :]
            )
        out.append(line)
    path.write_text("\n".join(out), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Command line: build from ``--data`` into ``--out`` (or ``--trim-baseline``). Returns 0, or 2 on unusable input."""
    parser = argparse.ArgumentParser(description="Build datasets/v1 from the shared labelled data")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="Shared data directory")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Output dataset directory")
    parser.add_argument(
        "--trim-baseline",
        type=Path,
        metavar="REPORT",
        help="Only empty the items' drill-down in this report (trim_baseline)",
    )
    args = parser.parse_args(argv)
    if args.trim_baseline is not None:
        try:
            trim_baseline(args.trim_baseline)
        except BuildError as exc:
            print(f"build_v1: {exc}", file=sys.stderr)
            return 2
        print(f"build_v1: trimmed {args.trim_baseline}")
        return 0
    try:
        files = build(args.data)
    except BuildError as exc:
        print(f"build_v1: {exc}", file=sys.stderr)
        return 2
    write(files, args.out)
    print(f"build_v1: wrote {len(files)} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
