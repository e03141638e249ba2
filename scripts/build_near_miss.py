"""Build ``datasets/near-miss`` from the real labelled data in ``../shared/data`` (issue 15).

One-word swaps of true sentences, each cited to the very passage it was
altered from, in four classes a bag-of-words verifier cannot see, plus the
untouched sentence as a control that must stay ``supported``
(``datasets/near-miss/README.md`` explains the design and the figures):

* ``borrowed``: a word replaced by another word that occurs elsewhere in the
  same passage, of the same sort (a number or number word by a number or
  number word, a capitalised word by a capitalised word, a lower-case word by
  a lower-case word);
* ``function_word``: a lower-case content word replaced by a function word;
* ``compound``: the second half of a hyphenated compound whose first half has
  four letters or more replaced by a word of the passage ("solar-powered" →
  "solar-cooled"): the shared first half is a prefix an inflection-tolerant
  word match accepts;
* ``prefix_longer``: a word replaced by a longer, different word of the data's
  vocabulary that merely starts with another word of the sentence
  ("discharged clinic" → "clinical clinic").

Every rule reads the source text only; nothing looks at what a target does
with an item. The output is a pure function of the input files (source order,
no timestamps, ``json.dumps(..., ensure_ascii=False, indent=2)`` plus a
newline), so ``tests/datasets/test_near_miss.py`` rebuilds it and compares bytes.

Each passage is one text document under its own label, so the single evidence
block the target can retrieve for an item, ``[S1]``, is the passage the swap
was made from. Swaps are ``adversarial`` items (``ECHO-CITED: <swap>``);
controls are ``qa`` drafts (``ECHO-CITED: <sentence>``, truths: the passage).

Usage::

    python scripts/build_near_miss.py [--data DIR] [--out DIR]
    python scripts/build_near_miss.py --summarise REPORT.json   # per-class figures of a run

``--data`` defaults to ``../shared/data`` relative to the repository root,
``--out`` to ``datasets/near-miss``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import xxhash

from pytest_groundeval.core.scoring import STOP_WORDS, content_tokens, negation_key, normalize_text
from pytest_groundeval.mock.behaviour import split_sentences

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"
DEFAULT_OUT = REPO_ROOT / "datasets" / "near-miss"

VERSION = "v1-near-miss"
"""The dataset's version: its own label, distinct from ``v1`` (docs/dataset.md)."""

HALUEVAL_FILE = "halueval/qa_one-turn_data.first400.jsonl"
TIMEQA_FILE = "timeqa/human_annotated_test.json"
LICENSES = {"halueval-LICENSE.txt": "halueval/LICENSE", "timeqa-LICENSE.txt": "timeqa/LICENSE"}

CLASSES = ("borrowed", "function_word", "compound", "prefix_longer")
"""The swap classes, in the order they are tried on each passage."""
PER_CLASS = 15
"""Swaps per class and per source (HaluEval, TimeQA)."""
TIMEQA_PARAGRAPHS = 2
"""Paragraphs used per TimeQA entity (the first after the title), so the swaps spread over many entities."""
MIN_CONTENT_WORDS = 4
"""A sentence needs this many content tokens to be a statement worth altering."""
MAX_TOKENS = 45
"""Longer sentences are skipped (a swap in a very long sentence is still caught, but reads badly)."""

FUNCTION_WORDS = ("on", "it", "then", "there", "in", "so", "also", "by")
"""Function words (all in ``scoring.STOP_WORDS``) put in place of a content word, used in turn."""
NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand "
    "million billion first second third fourth fifth sixth seventh eighth ninth tenth".split()
)
"""English number words (cardinal and ordinal) treated as numbers by ``borrowed``."""
INFLECTIONS = ("s", "es", "ed", "d", "ing", "er", "ers", "ly", "'s", "n", "en")
"""Endings that make a longer word an inflection of a shorter one; ``prefix_longer`` avoids them."""

_WORD = re.compile(r"[^\W\d_]+(?:[-'][^\W\d_]+)*|\d+(?:[.,]\d+)*")
_SPACE = re.compile(r"\s+")
_PASSAGE_SEAM = re.compile(r"(?<=[a-z0-9)\]\"'%])\.(?=[A-Z\"“])")


class BuildError(Exception):
    """The source data does not have the shape this script expects (names the file and row)."""


def dumps(value: Any) -> bytes:
    """The house JSON encoding: UTF-8, non-ASCII kept, two-space indent, trailing newline."""
    return (json.dumps(value, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def slug(text: str) -> str:
    """ASCII letters, digits and single hyphens, lower-case: usable in an item id."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


def halueval_paragraph(knowledge: str) -> str:
    """HaluEval knowledge as one paragraph: passage seams get their missing space (as ``build_v1``)."""
    return _SPACE.sub(" ", _PASSAGE_SEAM.sub(". ", knowledge)).strip()


def timeqa_paragraph(paragraph: str) -> str:
    """A TimeQA paragraph with its tokenised punctuation rejoined ("Arizona , Tucson" → "Arizona, Tucson")."""
    text = _SPACE.sub(" ", paragraph).strip()
    text = re.sub(r" ([,.;:!?)\]%])", r"\1", text)
    text = re.sub(r"([(\[]) ", r"\1", text)
    text = re.sub(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", text)
    return re.sub(r"(?<=\w) - (?=\w)", "-", text)


def claim_sentences(text: str) -> list[str]:
    """The claims the mock's decomposition makes of ``text`` (full stop, ``!``, ``?`` then whitespace)."""
    return [text[s.start : s.end] for s in split_sentences(text)]


@dataclass(frozen=True)
class Word:
    """One word of a sentence: its text and character offsets."""

    text: str
    start: int
    end: int

    @property
    def folded(self) -> str:
        return self.text.casefold()

    @property
    def is_number(self) -> bool:
        return self.text[0].isdigit() or self.folded in NUMBER_WORDS

    @property
    def is_content(self) -> bool:
        return self.folded not in STOP_WORDS and negation_key(self.folded) is None

    @property
    def sort(self) -> str:
        """``number``, ``capital`` or ``lower``: a word is only swapped for one of its own sort."""
        if self.is_number:
            return "number"
        return "capital" if self.text[0].isupper() else "lower"


def words(text: str) -> list[Word]:
    """The words and numbers of ``text`` in order (hyphen- and apostrophe-joined words stay one)."""
    return [Word(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]


def _related(a: str, b: str) -> bool:
    """Whether two words look like forms of one word (equal, or a shared four-letter prefix)."""
    a, b = a.casefold(), b.casefold()
    return a == b or (len(a) >= 4 and len(b) >= 4 and a[:4] == b[:4])


def _ascii_word(text: str) -> bool:
    return text.isascii() and text.isalpha()


def _replace(sentence: str, word: Word, new: str) -> str:
    return sentence[: word.start] + new + sentence[word.end :]


def _in_passage(swap: str, passage: str) -> bool:
    return normalize_text(swap) in normalize_text(passage)


# --------------------------------------------------------------------------- the four classes


def swap_borrowed(sentence: str, passage: str) -> tuple[str, str] | None:
    """``borrowed``: a word replaced by a different word of the same sort found elsewhere in the passage.

    Numbers and number words are tried first, then lower-case, then capitalised
    words; within a sort, the first word of the sentence that has a candidate,
    and the first candidate in passage order that is not the word just before
    or after it (no "solid solid"); numbers keep their shape (``_same_shape``). Returns ``(swap, sort)`` or None.
    """
    pool = [w for w in words(passage) if w.is_content]
    sentence_words = words(sentence)
    for sort in ("number", "lower", "capital"):
        for index, word in enumerate(sentence_words):
            if not word.is_content or word.sort != sort or (sort != "number" and len(word.text) < 3):
                continue
            neighbours = {w.folded for w in sentence_words[max(index - 1, 0) : index + 2]}
            for other in pool:
                if other.sort != sort or _related(other.text, word.text) or "-" in other.text:
                    continue
                if other.folded in neighbours or (sort != "number" and len(other.text) < 3):
                    continue
                if sort == "number" and not _same_shape(word.text, other.text):
                    continue
                swap = _replace(sentence, word, other.text)
                if not _in_passage(swap, passage):
                    return swap, sort
    return None


def _same_shape(a: str, b: str) -> bool:
    """Numbers of one shape: both number words, or both digits with as many digits (a year for a year)."""
    if a[0].isdigit() != b[0].isdigit():
        return False
    return not a[0].isdigit() or (len(a) == len(b) and a.isdigit() == b.isdigit())


def swap_function_word(sentence: str, passage: str, turn: int) -> str | None:
    """``function_word``: the first lower-case content word (4+ letters, not the first word) → a function word."""
    new = FUNCTION_WORDS[turn % len(FUNCTION_WORDS)]
    for word in words(sentence)[1:]:
        if word.is_content and word.sort == "lower" and len(word.text) >= 4 and word.text.isalpha():
            swap = _replace(sentence, word, new)
            if not _in_passage(swap, passage):
                return swap
    return None


def swap_compound(sentence: str, passage: str) -> str | None:
    """``compound``: the second half of a hyphenated compound (first half 4+ letters) → another passage word.

    Only ASCII compounds whose second half is lower-case ("Moroccan-Dutch" is
    two names, not a compound with a head word). The replacement is the first
    lower-case ASCII content word of the passage (4+ letters) unrelated to
    either half.
    """
    pool = [
        w for w in words(passage) if w.is_content and w.sort == "lower" and _ascii_word(w.text) and len(w.text) >= 4
    ]
    for word in words(sentence):
        parts = word.text.split("-")
        if len(parts) != 2 or len(parts[0]) < 4 or not all(map(_ascii_word, parts)) or len(parts[1]) < 2:
            continue
        if parts[1] in sentence.split() or parts[1][0].isupper():
            continue
        for other in pool:
            if _related(other.text, parts[1]) or _related(other.text, parts[0]):
                continue
            swap = _replace(sentence, word, f"{parts[0]}-{other.text}")
            if not _in_passage(swap, passage):
                return swap
    return None


def swap_prefix_longer(sentence: str, passage: str, vocabulary: Sequence[str]) -> str | None:
    """``prefix_longer``: a word → a longer vocabulary word that starts with *another* word of the sentence.

    The base is a lower-case content word of the sentence (5+ letters); the
    longer word starts with it, has at least two more letters, is not the base
    plus an inflection ending (``INFLECTIONS``) and does not occur in the
    passage (shortest first, then alphabetical). The word replaced is the one
    just before the base when that is a lower-case content word unrelated to
    both, else the first such word of the sentence.
    """
    passage_words = {w.folded for w in words(passage)}
    sentence_words = words(sentence)
    for index, base in enumerate(sentence_words):
        if not (base.is_content and base.sort == "lower" and base.text.isalpha() and len(base.text) >= 5):
            continue
        longer = _longer_word(base.folded, vocabulary, passage_words)
        if longer is None:
            continue
        candidates = ([sentence_words[index - 1]] if index else []) + sentence_words
        for word in candidates:
            if (
                word is base
                or not (word.is_content and word.sort == "lower" and word.text.isalpha())
                or _related(word.text, base.text)
                or _related(word.text, longer)
            ):
                continue
            swap = _replace(sentence, word, longer)
            if not _in_passage(swap, passage):
                return swap
    return None


def _longer_word(base: str, vocabulary: Sequence[str], exclude: set[str]) -> str | None:
    for word in vocabulary:
        if (
            word.startswith(base)
            and len(word) >= len(base) + 2
            and word not in exclude
            and word[len(base) :] not in INFLECTIONS
            and word[len(base) + 1 :] not in INFLECTIONS[:3]  # "planned": doubled consonant + ending
        ):
            return word
    return None


# --------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class Passage:
    """One source passage: where it is from, its id part and text."""

    source: str
    """``halueval`` or ``timeqa``."""
    key: str
    """Id part: the HaluEval row (``0012``) or the TimeQA entity slug and paragraph (``sabine-hossenfelder-p5``)."""
    text: str


def read_halueval(path: Path) -> list[Passage]:
    """Each HaluEval row's knowledge as one passage; raises ``BuildError`` naming the line on a bad row."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BuildError(f"{path}: {exc}") from exc
    passages = []
    for index, line in enumerate(lines):
        try:
            knowledge = json.loads(line)["knowledge"]
        except (ValueError, KeyError, TypeError) as exc:
            raise BuildError(f"{path}: line {index + 1}: {exc!r}") from exc
        passages.append(Passage("halueval", f"{index:04d}", halueval_paragraph(knowledge)))
    return passages


def read_timeqa(path: Path) -> list[Passage]:
    """Each TimeQA entity's paragraphs after the title, in order, as passages; ``BuildError`` on a bad entity."""
    try:
        entities = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BuildError(f"{path}: {exc}") from exc
    passages = []
    seen: set[str] = set()
    for number, entity in enumerate(entities):
        try:
            name, paras = entity["link"].rsplit("/", 1)[-1], entity["paras"]
        except (KeyError, TypeError, AttributeError) as exc:
            raise BuildError(f"{path}: entity {number}: {exc!r}") from exc
        if slug(name) in seen:
            continue
        seen.add(slug(name))
        for index, para in enumerate(paras[1 : TIMEQA_PARAGRAPHS + 1], start=1):
            passages.append(Passage("timeqa", f"{slug(name)}-p{index}", timeqa_paragraph(para)))
    return passages


def vocabulary(passages: Sequence[Passage]) -> list[str]:
    """Lower-case alphabetic words of all passages, shortest first then alphabetical (``prefix_longer``)."""
    found = {w.text for p in passages for w in words(p.text) if w.text.isalpha() and w.text.islower()}
    return sorted(found, key=lambda w: (len(w), w))


def statements(passage: str) -> Iterator[str]:
    """Sentences of the passage fit to alter: one claim by the mock's split, 4+ content words, ≤ 45 tokens."""
    for sentence in claim_sentences(passage):
        sentence = sentence.strip()
        if (
            len(claim_sentences(sentence)) == 1
            and sentence[-1:] == "."
            and len(set(content_tokens(sentence))) >= MIN_CONTENT_WORDS
            and len(words(sentence)) <= MAX_TOKENS
        ):
            yield sentence


# --------------------------------------------------------------------------- build


class Builder:
    """Accumulates corpus files, manifest entries and items, in the order they are added."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.corpus: list[dict[str, str]] = []
        self.swaps: list[dict[str, Any]] = []
        self.controls: list[dict[str, Any]] = []
        self.counts: dict[tuple[str, str], int] = {}

    def label(self, passage: Passage) -> str:
        """The passage's label (its own document), added to the corpus on first use."""
        label = f"NEAR_MISS_{passage.source.upper()}_{passage.key.upper().replace('-', '_')}"
        file = f"{passage.source}-{passage.key}.txt"
        if file not in self.files:
            self.files[file] = (passage.text + "\n").encode("utf-8")
            self.corpus.append(
                {"name": f"{passage.source}/{passage.key}.txt", "label": label, "file": file, "format": "text"}
            )
        return label

    def manifest(self) -> dict[str, Any]:
        """The manifest (format v1) with xxh3_64 hashes of the raw corpus bytes."""
        items = self.swaps + self.controls
        ids = [item["id"] for item in items]
        if len(ids) != len(set(ids)):
            raise BuildError(f"duplicate item ids: {sorted({i for i in ids if ids.count(i) > 1})}")
        return {
            "version": VERSION,
            "corpus": self.corpus,
            "corpusHashes": {file: xxhash.xxh3_64_hexdigest(content) for file, content in self.files.items()},
            "items": items,
        }


def add_source(builder: Builder, passages: Sequence[Passage], vocab: Sequence[str]) -> None:
    """Swaps of every class from one source's passages, ``PER_CLASS`` each, with their controls.

    Passages are visited in source order; on each, every class still short of
    ``PER_CLASS`` is tried on the passage's statements in order and takes the
    first swap it can make. A passage gives at most one swap per class, and
    each altered sentence appears once as a control.
    """
    for passage in passages:
        made: list[tuple[str, str, str, list[str]]] = []
        for cls in CLASSES:
            if builder.counts.get((passage.source, cls), 0) >= PER_CLASS:
                continue
            for sentence in statements(passage.text):
                extra: list[str] = []
                if cls == "borrowed":
                    found = swap_borrowed(sentence, passage.text)
                    swap = found[0] if found else None
                    extra = [f"sort_{found[1]}"] if found else []
                elif cls == "function_word":
                    swap = swap_function_word(sentence, passage.text, builder.counts.get((passage.source, cls), 0))
                elif cls == "compound":
                    swap = swap_compound(sentence, passage.text)
                else:
                    swap = swap_prefix_longer(sentence, passage.text, vocab)
                if swap is not None and swap != sentence and claim_sentences(swap) == [swap]:
                    made.append((cls, sentence, swap, extra))
                    builder.counts[(passage.source, cls)] = builder.counts.get((passage.source, cls), 0) + 1
                    break
        if not made:
            continue
        label = builder.label(passage)
        originals: list[str] = []
        for cls, sentence, swap, extra in made:
            if sentence not in originals:
                originals.append(sentence)
            builder.swaps.append(
                {
                    "id": f"nm-{passage.source}-{passage.key}-{cls.replace('_', '-')}",
                    "kind": "adversarial",
                    "question": f"ECHO-CITED: {swap}",
                    "find": label,
                    "tags": [passage.source, "echo_cited", "near_miss", cls, *extra],
                }
            )
        for number, sentence in enumerate(originals, start=1):
            builder.controls.append(
                {
                    "id": f"nm-{passage.source}-{passage.key}-original-{number}",
                    "kind": "qa",
                    "question": f"ECHO-CITED: {sentence}",
                    "find": label,
                    "expectedEvidence": [],
                    "truths": [passage.text],
                    "tags": [passage.source, "draft", "control"],
                }
            )
    for cls in CLASSES:
        source = passages[0].source if passages else "?"
        if builder.counts.get((source, cls), 0) < PER_CLASS:
            raise BuildError(f"{source}: only {builder.counts.get((source, cls), 0)} {cls} swaps; need {PER_CLASS}")


def build(data: Path) -> dict[str, bytes]:
    """The files of ``datasets/near-miss``: ``manifest.json``, ``corpus/*``, ``licenses/*`` (README by hand).

    Raises:
        BuildError: a source file is missing or malformed, or yields too few swaps.
    """
    halueval = read_halueval(data / HALUEVAL_FILE)
    timeqa = read_timeqa(data / TIMEQA_FILE)
    vocab = vocabulary([*halueval, *timeqa])
    builder = Builder()
    add_source(builder, halueval, vocab)
    add_source(builder, timeqa, vocab)
    out = {"manifest.json": dumps(builder.manifest())}
    out.update({f"corpus/{file}": content for file, content in builder.files.items()})
    for target, source in LICENSES.items():
        try:
            out[f"licenses/{target}"] = (data / source).read_bytes()
        except OSError as exc:
            raise BuildError(f"{data / source}: {exc}") from exc
    return out


def write(files: dict[str, bytes], out: Path) -> None:
    """Write the files under ``out``, removing stale files in ``corpus/`` and ``licenses/``."""
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


# --------------------------------------------------------------------------- figures of a run


def summarise(report: dict[str, Any], manifest: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per class: swaps rejected / total, and controls supported / total, from a ``--eval-report`` file.

    A swap counts as rejected when its adversarial item passed (the planted
    falsehood was not marked supported); a control counts as supported when its
    qa item's true, cited claims were all supported. An errored item counts as
    neither rejected nor supported (it stays in the denominator).

    Returns:
        ``{"borrowed": {"rejected": n, "total": m}, …, "control": {"supported": n, "total": m}}``,
        plus ``"<source>:<class>"`` rows per source.
    """
    outcomes = {item["id"]: item for item in report.get("items", [])}
    rows: dict[str, dict[str, int]] = {}
    for item in manifest["items"]:
        tags = item.get("tags", [])
        cls = next((t for t in tags if t in CLASSES), "control" if "control" in tags else None)
        if cls is None:
            continue
        outcome = outcomes.get(item["id"], {})
        if cls == "control":
            ok = (
                outcome.get("error") is None
                and outcome.get("claimsTrueCited", 0) > 0
                and (outcome.get("claimsTrueCitedSupported") == outcome.get("claimsTrueCited"))
            )
            key = "supported"
        else:
            ok = outcome.get("error") is None and outcome.get("pass") is True
            key = "rejected"
        for row in (cls, f"{tags[0]}:{cls}"):
            figures = rows.setdefault(row, {key: 0, "total": 0})
            figures[key] += int(ok)
            figures["total"] += 1
    return rows


def main(argv: list[str] | None = None) -> int:
    """Command line: build from ``--data`` into ``--out``, or ``--summarise`` a run's report. 0, or 2 on bad input."""
    parser = argparse.ArgumentParser(description="Build datasets/near-miss from the shared labelled data")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="Shared data directory")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Output dataset directory")
    parser.add_argument("--summarise", type=Path, metavar="REPORT", help="Print per-class figures of a run's report")
    args = parser.parse_args(argv)
    if args.summarise is not None:
        try:
            report = json.loads(args.summarise.read_text(encoding="utf-8"))
            manifest = json.loads((args.out / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"build_near_miss: {exc}", file=sys.stderr)
            return 2
        for row, figures in sorted(summarise(report, manifest).items(), key=lambda kv: (":" in kv[0], kv[0])):
            key = "supported" if "supported" in figures else "rejected"
            print(f"{row:28s} {key} {figures[key]:3d} / {figures['total']:3d} = {figures[key] / figures['total']:.4f}")
        return 0
    try:
        files = build(args.data)
    except BuildError as exc:
        print(f"build_near_miss: {exc}", file=sys.stderr)
        return 2
    write(files, args.out)
    print(f"build_near_miss: wrote {len(files)} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
