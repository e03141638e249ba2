"""Claim scoring (docs/scoring.md): tokens, coverage, truth with guards, and the recall leg.

Everything here is pure and deterministic; the plugin and the reference
server's verifier share it so "true" means the same thing on both sides.

Tokenisation rules (``tokenize``), applied to the NFC-normalised, case-folded
text:

* **Numbers** are one token each: digits with inner ``.``/``,`` groups and an
  optional ``%`` (``3.5%``, ``3,5 %``, ``384.400``, ``1,000``). Spaces before
  ``%`` are removed (``3,5 %`` becomes ``3,5%``); the decimal and group
  punctuation is kept as written, so ``3,5%`` and ``3.5%`` are different
  numbers, and so are ``1,000`` and ``1000``. A leading ``-`` (or U+2212
  MINUS SIGN, stored as ``-``) belongs to the number when it does not follow a
  word character (``-3`` but ``covid-19`` gives ``covid``, ``19``). Digits
  glued to letters are split (``384m`` gives ``384``, ``m``).
* **Words** are runs of letters (``\\w`` without digits and without ``_``)
  with their combining marks. Letters joined by a hyphen or an apostrophe stay
  one token: ``e-post``, ``stockholms-området``, ``isn't``, ``l'eau``. This
  keeps a Swedish hyphenated compound, which is one word, from breaking into
  fragments such as ``e`` that would match unrelated text. Typographic
  apostrophes (U+2019, U+02BC) and hyphens (U+2010, U+2011) are stored as
  ASCII ``'`` and ``-``.
* **CJK** ideographs and kana (Japanese and Chinese have no spaces) are one
  token per character. **Thai, Lao, Khmer and Myanmar** are split into
  characters, each carrying its following combining marks (``ไม่`` gives
  ``ไ``, ``ม่``); no dictionary segmentation is attempted, so coverage over
  these scripts is character-level.
* Everything else (punctuation, symbols, ``_``) separates tokens.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence

COVERAGE_THRESHOLD = 0.6
"""Minimum share of a claim's distinct tokens a truth must contain (docs/scoring.md)."""


def _combining_marks_class() -> str:
    """A regex character class body listing every combining mark (category M*).

    Marks sit in the BMP and SMP plus the variation selectors supplement, so only
    those planes are scanned; scanning all 1.1M code points costs ~0.25 s at import.
    """
    code_points = [c for c in range(0x20000) if unicodedata.category(chr(c))[0] == "M"]
    code_points += [c for c in range(0xE0100, 0xE01F0) if unicodedata.category(chr(c))[0] == "M"]
    ranges: list[tuple[int, int]] = []
    for cp in code_points:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges
    )


# Scripts written without spaces between words: one token per character.
_CJK = (
    "\u3005\u3007"  # 々 iteration mark, 〇 ideographic zero
    "\u3040-\u30ff"  # hiragana, katakana
    "\u31f0-\u31ff"  # katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width katakana
    "\U00020000-\U0003134f"  # CJK extensions B-G and compatibility supplement
)
_SOUTHEAST_ASIAN = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
)
_NO_SPACE = f"[{_CJK}{_SOUTHEAST_ASIAN}]"
_LETTER = rf"(?:(?!{_NO_SPACE})[^\W\d_])"

_NUMBER = r"(?<!\w)-?\d+(?:[.,]\d+)*(?:\s*%)?|\d+(?:[.,]\d+)*(?:\s*%)?"


@functools.cache
def _token_re() -> re.Pattern[str]:
    """The tokenizer's pattern for any text, built when ``tokenize`` first sees text that is not ASCII.

    Not at import: listing the combining marks scans 0x20000 code points and the pattern's classes
    are large, 40-70 ms on a 2-core VM, paid by every process that imports scoring (the pytest
    process, the reference server) even when every text it scores is ASCII.
    """
    mark = f"[{_combining_marks_class()}]"
    letter_run = rf"{_LETTER}(?:{_LETTER}|{mark})*"
    return re.compile(
        rf"(?P<number>{_NUMBER})"
        rf"|(?P<cjk>[{_CJK}]{mark}*)"
        rf"|(?P<sea>(?=[^\W\d_])[{_SOUTHEAST_ASIAN}]{mark}*)"
        rf"|(?P<word>{letter_run}(?:['-]{letter_run})*)"
    )


_ASCII_TOKEN_RE = re.compile(rf"(?P<number>{_NUMBER})|(?P<word>[^\W\d_]+(?:['-][^\W\d_]+)*)")
"""``_token_re()`` on ASCII text, where no character is a mark or of a script without spaces: the same tokens."""
_NUMBER_TOKEN_RE = re.compile(r"-?\d+(?:[.,]\d+)*%?")
_SPACE_RE = re.compile(r"\s+")
_PUNCTUATION_FOLD = str.maketrans({"\u2019": "'", "\u02bc": "'", "\u2010": "-", "\u2011": "-", "\u2212": "-"})

NEGATIONS: frozenset[str] = frozenset(
    {
        # English. Contractions ("isn't", "don't", "can't", "won't") are single
        # tokens ending in "n't" and are recognised by suffix in ``is_negation``.
        "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "nowhere", "cannot",
        # Spanish.
        "nunca", "jamás", "ninguno", "ninguna", "ningún", "nadie", "nada", "tampoco", "ni",
        # Swedish.
        "inte", "ej", "aldrig", "ingen", "inget", "inga", "icke", "varken",
    }
)  # fmt: skip
"""Negation words, case-folded, for English, Spanish and Swedish (docs/scoring.md).

A claim that carries one of these is true only if the truth that covers it
carries the same negation. English ``n't`` contractions are not listed: any
token ending in ``n't`` counts as the negation ``not`` (see ``negation_key``),
so "isn't" in a claim is matched by "is not" in a truth and vice versa.
Spanish "ni" (neither/nor) is listed although it is also the Swedish pronoun
"ni" (you); it is a negation wherever it appears.
"""

STOP_WORDS: frozenset[str] = frozenset(
    # One set per language, joined: a word two languages share ("en", "de", "i", ...) stays in both lists.
    {
        # English function words.
        "a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "with", "from", "into", "onto",
        "about", "as", "and", "or", "but", "if", "than", "then", "so", "that", "this", "these",
        "those", "it", "its", "it's", "is", "are", "was", "were", "be", "been", "being", "am", "has",
        "have", "had", "do", "does", "did", "will", "would", "shall", "should", "can", "could",
        "may", "might", "must", "there", "their", "they", "them", "he", "she", "his", "her", "we",
        "our", "you", "your", "i", "which", "who", "whom", "whose", "what", "also", "such",
    } | {
        # Spanish function words.
        "el", "la", "los", "las", "lo", "un", "una", "unos", "unas", "de", "del", "al", "en", "y", "e",
        "o", "u", "que", "es", "son", "fue", "fueron", "era", "eran", "ser", "está", "están", "por",
        "para", "con", "sin", "se", "su", "sus", "le", "les", "como", "este", "esta", "estos",
        "estas", "ese", "esa", "muy", "más", "pero", "sobre", "entre", "hay", "ha", "han",
    } | {
        # Swedish function words.
        "en", "ett", "den", "det", "de", "och", "i", "på", "av", "till", "för", "med", "som", "är",
        "var", "varit", "har", "hade", "om", "att", "från", "vid", "men", "eller", "sig", "sin",
        "sitt", "sina", "han", "hon", "hen", "vi", "dem", "deras", "detta", "denna", "dessa",
        "också", "under", "efter", "över",
    }
)  # fmt: skip
"""Function words ignored by ``content_tokens`` (English, Spanish, Swedish; case-folded).

Negation words are deliberately absent: a negation changes what a sentence
asserts, so it is always content.
"""


def normalize_text(s: str) -> str:
    """Normalise text for containment checks: NFC, case-folded, whitespace collapsed, stripped.

    Args:
        s: Any text.

    Returns:
        The normalised text; runs of whitespace become one ASCII space (docs/scoring.md).
    """
    # str.split() splits at exactly the characters `\s` matches (str.isspace) and drops the ends.
    if s.isascii():  # NFC leaves ASCII as it is, and ASCII case-folds as it lowers
        return " ".join(s.lower().split())
    return " ".join(unicodedata.normalize("NFC", unicodedata.normalize("NFC", s).casefold()).split())


def tokenize(text: str) -> list[str]:
    """Split text into scoring tokens, in order, duplicates kept (docs/scoring.md).

    The rules (numbers, hyphenated and apostrophe-joined words, CJK and Thai)
    are in the module docstring. NFC and NFD spellings of the same text give
    identical tokens.

    Args:
        text: Any text.

    Returns:
        The tokens, NFC-normalised and case-folded.
    """
    if text.isascii():  # NFC and the punctuation fold leave ASCII as it is, and ASCII case-folds as it lowers
        folded, pattern = text.lower(), _ASCII_TOKEN_RE
    else:
        folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
        folded, pattern = folded.translate(_PUNCTUATION_FOLD), _token_re()
    tokens: list[str] = []
    for match in pattern.finditer(folded):
        token = match.group()
        if match.lastgroup == "number":
            token = _SPACE_RE.sub("", token)
        tokens.append(token)
    return tokens


def is_number_token(tok: str) -> bool:
    """Whether a token (as ``tokenize`` emits it) is a number such as ``3.5%`` or ``-3``."""
    return _NUMBER_TOKEN_RE.fullmatch(tok) is not None


def negation_key(tok: str) -> str | None:
    """The negation a token expresses, or None.

    English contractions ending in ``n't`` and ``cannot`` map to ``"not"`` so that
    "isn't" and "is not" carry the same negation; other negation words map to
    themselves.
    """
    if tok.endswith("n't") or tok == "cannot":
        return "not"
    return tok if tok in NEGATIONS else None


def is_negation(tok: str) -> bool:
    """Whether a token is a negation word (``NEGATIONS`` or an ``n't`` contraction)."""
    return negation_key(tok) is not None


def content_tokens(text: str) -> list[str]:
    """Tokens of ``text`` minus ``STOP_WORDS``, in order.

    Numbers and negations are kept: they are what a near-miss falsehood changes.
    The reference server's verifier uses these as the "content words" a cited
    span must account for (docs/target-contract.md).
    """
    return [tok for tok in tokenize(text) if tok not in STOP_WORDS]


@functools.lru_cache(maxsize=4096)
def _truth_tokens(truth: str) -> frozenset[str]:
    """A truth's distinct tokens, remembered: an item's truths are scored against each of its claims.

    A qa item carries some eight truths of ~340 characters (datasets/v1) and its answer
    several claims; without the cache each claim tokenised every truth again, the largest
    share of the plugin's CPU per item (benchmarks/README.md). 4,096 truths of that size
    hold about 10 MB.
    """
    return frozenset(tokenize(truth))


@functools.lru_cache(maxsize=4096)
def _truth_negations(truth: str) -> frozenset[str]:
    """The negations a truth's tokens express (``negation_key``), remembered as its tokens are."""
    return frozenset(key for tok in _truth_tokens(truth) if (key := negation_key(tok)) is not None)


def _coverage(claim_tokens: set[str], truth_tokens: frozenset[str] | set[str]) -> float:
    if not claim_tokens:
        return 0.0
    return len(claim_tokens & truth_tokens) / len(claim_tokens)


def claim_coverage(claim: str, truth: str) -> float:
    """Share of the claim's distinct tokens that also occur in the truth (docs/scoring.md).

    Args:
        claim: The claim text.
        truth: One reference truth.

    Returns:
        ``|set(claim tokens) ∩ set(truth tokens)| / |set(claim tokens)|`` in [0, 1];
        0.0 when the claim has no tokens.
    """
    return _coverage(set(tokenize(claim)), _truth_tokens(truth))


def _guards_hold(claim_tokens: set[str], truth_tokens: frozenset[str], truth: str) -> bool:
    numbers = {tok for tok in claim_tokens if is_number_token(tok)}
    if not numbers <= truth_tokens:
        return False
    claim_negations = {negation_key(tok) for tok in claim_tokens} - {None}
    return claim_negations <= _truth_negations(truth)


def _judge(claim: str, truths: Iterable[str]) -> tuple[str | None, float, bool]:
    """Best truth for a claim: the first that makes it true, else the best-covering one."""
    claim_tokens = set(tokenize(claim))
    best: str | None = None
    best_coverage = -1.0
    for truth in truths:
        truth_tokens = _truth_tokens(truth)
        coverage = _coverage(claim_tokens, truth_tokens)
        if coverage >= COVERAGE_THRESHOLD and claim_tokens and _guards_hold(claim_tokens, truth_tokens, truth):
            return truth, coverage, True
        if coverage > best_coverage:
            best, best_coverage = truth, coverage
    return best, max(best_coverage, 0.0), False


def claim_is_true(claim: str, truths: Iterable[str]) -> bool:
    """Whether some truth supports the claim (docs/scoring.md, with our near-miss guards).

    A claim is true when one truth covers at least ``COVERAGE_THRESHOLD`` of the
    claim's distinct tokens **and** that same truth contains every number token of
    the claim and every negation of the claim (compared by ``negation_key``). The
    guards reject near-miss falsehoods — a swapped figure, an inserted "not" —
    that the bare coverage rule accepts. A claim with no tokens is never true.

    Args:
        claim: The claim text.
        truths: Reference truths (any iterable of strings; may be empty).

    Returns:
        True when some truth supports the claim.
    """
    return _judge(claim, truths)[2]


def best_truth(claim: str, truths: Iterable[str]) -> tuple[str | None, float]:
    """The truth to show in a failure message, with its coverage of the claim.

    Returns:
        ``(truth, coverage)``: the first truth that makes the claim true if any,
        otherwise the truth with the highest coverage (the first on ties);
        ``(None, 0.0)`` when ``truths`` is empty.
    """
    truth, coverage, _ = _judge(claim, truths)
    return truth, coverage


def evidence_found(expected: str, spans: Sequence[str]) -> bool:
    """Recall leg (docs/scoring.md): whether an expected evidence string occurs in a retrieved span.

    Both sides are compared as ``normalize_text`` (NFC, case-folded, whitespace
    collapsed), so line breaks and capitals in the corpus do not matter.

    Args:
        expected: One expected evidence string from the dataset.
        spans: Retrieved evidence span texts, sliced locally from canonical text.

    Returns:
        True when the normalised expected text is a substring of some normalised span.

    Raises:
        ValueError: ``expected`` is empty after normalisation (it would match anything).
    """
    needle = normalize_text(expected)
    if not needle:
        raise ValueError(f"expected evidence string {expected!r} is empty after normalisation")
    return any(needle in normalize_text(span) for span in spans)


class EvidenceSearch:
    """Whether an expected evidence string occurs in a corpus's canonical text, as ``evidence_found`` compares.

    The loader asks it for every ``expectedEvidence`` string (docs/dataset.md): a
    string no span of the corpus could contain is a dataset error, not the
    target's failure. Texts are compared as ``evidence_found`` compares them
    (``normalize_text``), so a string a retrieved span could match is never
    refused. A span cut between a base letter and its combining mark normalises
    differently from the whole text, so a string not found in the normalised
    text is looked for once more in canonical decomposition (NFD) before it is
    refused. Each document is normalised once, on first use.

    Args:
        texts: Corpus entry name -> canonical text.
    """

    def __init__(self, texts: Mapping[str, str]) -> None:
        self._texts = texts
        self._normal: dict[str, str] = {}
        self._decomposed: dict[str, str] = {}

    def _normalised(self, name: str) -> str:
        if name not in self._normal:
            self._normal[name] = normalize_text(self._texts[name])
        return self._normal[name]

    def _nfd(self, name: str) -> str:
        if name not in self._decomposed:
            self._decomposed[name] = unicodedata.normalize("NFD", self._normalised(name))
        return self._decomposed[name]

    def occurs(self, expected: str, document: str | None = None) -> bool:
        """Whether ``expected`` could be found in a span of ``document`` (None: of any document).

        Args:
            expected: One expected evidence string.
            document: A corpus entry name, or None for every document.

        Raises:
            KeyError: ``document`` is not a corpus entry name.
        """
        names = self._texts if document is None else (document,)
        needle = normalize_text(expected)
        for name in names:
            if needle in (self._normal.get(name) or self._normalised(name)):
                return True
        decomposed = unicodedata.normalize("NFD", needle)
        return any(decomposed in self._nfd(name) for name in names)
