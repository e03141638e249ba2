"""Claim verification against the cited evidence (``docs/scoring.md``, ``docs/target-contract.md``).

Verdict rule for one claim (the claim text with its ``[S#]`` markers removed):

1. No marker, or only markers that name no evidence block of this answer →
   ``unsupported`` (an uncited claim is never supported).
2. Otherwise the cited spans' texts are the claim's only admissible source.
   The claim is ``supported`` when all three hold:

   - **coverage with guards** — ``scoring.claim_is_true(claim, truths)`` with
     the cited span texts as the truths (plus their concatenation when several
     are cited): ≥ 0.6 token coverage, and every number and negation of the
     claim present in that span (the ``docs/scoring.md`` guard);
   - **no new content word** — every content word of the claim
     (``scoring.content_tokens``; function words are stop words and allowed)
     is accounted for by a word of the cited spans (:func:`same_word`:
     equal, or the same word up to inflection by a crude stem rule; numbers
     and number words only match themselves, negations by
     ``scoring.negation_key``, hyphenated compounds part by part);
   - **alignment in order** (:func:`align_claim`) — the claim follows one
     sentence of a cited span in order (two adjacent sentences when it takes
     its subject from the first and the rest from the start of the second;
     one sentence of each of two cited spans when it cites several). The
     claim is tried whole, then cut into clauses at commas, semicolons,
     colons, parentheses and dashes, which may trade places (a fronted "After
     the launch, …"), then with one clause cut once more, and as a passive
     ("B is run by A" for "A runs B"); inside each piece every content word
     must be matched, in sequence, by a distinct word of the sentence (a piece
     with one content word must sit between its neighbours; one half of a cut
     clause may reach round the other only when nothing else lies in between,
     so "more in Paris than in Rome" is not "more in Rome than in Paris"). In the gaps
     between matched words (and next to the first and last): a function word
     the claim puts where the sentence has a content word is a substitution
     ("the decision was premature" → "the decision was on") unless a function
     word of the sentence explains it (article drift: "a"/"the") or a form of
     "be" stands for one of :data:`LINKING_VERBS`; a negation left out inside
     the aligned stretch, or one of :data:`MEANING_MODIFIERS` inside or next
     to it ("a former president" → "a president"), changes the meaning. Other
     words may be left out (a restatement may drop a parenthetical or an
     adjective). This is what catches a word borrowed from elsewhere in the
     same span ("seven cars and two buses" → "two cars and two buses"): all
     its words are in the span, just not in that place.

3. A claim that passes 2 but drops a negation is not supported either: the
   cited sentence that best covers the claim (most shared content words) must
   carry no negation the claim lacks ("It does not change the API" cited for
   "It changes the API" is ``contradicted``). Only that sentence counts, so a
   claim may leave out a negated *other* sentence of the same span.
4. When it is not supported and every content word it brings in is a number
   or a negation, the claim is ``contradicted`` (a swapped figure, an inserted
   "not": the span says otherwise); any other failure is ``unsupported`` (a
   one-word swap such as "rose" → "fell" or "Stockholm" → "Oslo", a word out
   of place, or too little coverage). ``unverifiable`` is never produced by
   this server.

:func:`verify_claims` judges all claims of one answer against one index of
the evidence (each span tokenised and indexed once); it is a pure function of
picklable arguments, so the server runs it in a process pool (whose workers
``pool.pool_worker_init`` sets up). Claims come from ``decompose.parse_decomposition``.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ..core.contract import strip_markers
from ..core.scoring import (
    COVERAGE_THRESHOLD,
    STOP_WORDS,
    content_tokens,
    is_number_token,
    negation_key,
    tokenize,
)

STEM_PREFIX = 5
"""A shared prefix this long makes two words the same word for verification."""
STEM_SHARE = 0.8
"""…or a shared prefix covering this share of the shorter word."""
MIN_STEM_CHARS = 4
"""Both words need this many characters for the prefix rules; a shorter word needs an ending match.

Without it the 80 % rule lets a one-letter token (the "d" of "D.C.") account
for any word that starts with its letter ("designed").
"""
SHORT_WORD_ENDINGS = ("s", "es", "'s", "d", "ed", "ing", "er", "ar", "en", "et", "na")
"""Inflection endings (English, Swedish) by which a word of 2–3 characters may grow: "run"/"runs", "år"/"åren"."""

NUMBER_WORDS: frozenset[str] = frozenset(
    {
        # English cardinals and ordinals.
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
        "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred",
        "thousand", "million", "billion", "trillion", "first", "second", "third", "fourth", "fifth",
        "sixth", "seventh", "eighth", "ninth", "tenth", "twelfth", "twentieth", "hundredth", "dozen",
        # Spanish ("un", "una" are function words).
        "uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve", "diez", "once",
        "doce", "veinte", "treinta", "cuarenta", "cincuenta", "cien", "ciento", "mil", "millón",
        "millones", "primero", "primera", "segundo", "segunda", "tercero", "tercera",
        # Swedish ("en", "ett" are function words).
        "två", "tre", "fyra", "fem", "sex", "sju", "åtta", "nio", "tio", "elva", "tolv", "tjugo",
        "hundra", "tusen", "miljon", "miljoner", "första", "andra", "tredje", "fjärde", "femte",
    }
)  # fmt: skip
"""Number words (case-folded) that, like digits, match only themselves (or their plural in ``s``).

Without this the stem rule lets "seventeen" stand for "seven" and "fourteen"
for "four" (a shared prefix of five letters, or of 80 % of the shorter word).
"""

MEANING_MODIFIERS: frozenset[str] = frozenset(
    {
        "former", "ex", "vice", "deputy", "acting", "interim", "assistant", "honorary", "alleged",
        "almost", "nearly", "without", "except", "unofficial", "non",
        "antiguo", "antigua", "casi", "före", "detta", "nästan", "utan",
    }
)  # fmt: skip
"""Words a restatement may not leave out of the stretch it aligns with: dropping one changes the meaning
("the former president" → "the president"). Negations are checked as well (``scoring.negation_key``)."""

COPULAS: frozenset[str] = frozenset(
    {
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "es",
        "son",
        "fue",
        "era",
        "está",
        "están",
        "är",
        "var",
        "varit",
    }
)
"""Forms of "be" (function words) that may stand for a linking verb of the evidence."""
LINKING_VERBS: frozenset[str] = frozenset(
    {
        "feel", "feels", "felt", "seem", "seems", "seemed", "look", "looks", "looked", "appear", "appears",
        "appeared", "remain", "remains", "remained", "stay", "stays", "stayed", "become", "becomes", "became",
        "parece", "parecen", "resulta", "sigue", "siguen", "verkar", "känns", "ser", "förblir",
    }
)  # fmt: skip
"""Linking verbs a copula may replace in a restatement ("might feel cold" → "might be cold",
"the sun looks white" → "the sun is white"): the one content-for-function substitution allowed."""

AGENT_WORDS: frozenset[str] = frozenset({"by", "por", "av"})
"""The word that introduces the agent of a passive ("is run by the office"; Spanish, Swedish)."""


def same_word(claim_word: str, span_word: str) -> bool:
    """Whether a span word accounts for a claim word (``docs/target-contract.md``: inflection drift allowed).

    Equal words match. Numbers and :data:`NUMBER_WORDS` match only themselves
    (a number word also its plural in ``s``); negations match by
    ``scoring.negation_key``. A hyphenated compound matches a compound with as
    many parts, part by part ("solar-powered" is not "solar-cooled", though they
    share a six-letter prefix), or the same letters without hyphens ("e-mail"/
    "email"). Otherwise, when both words have at least :data:`MIN_STEM_CHARS`
    characters, they match when their common prefix has :data:`STEM_PREFIX`
    characters or :data:`STEM_SHARE` of the shorter word ("shipped"/"ships"). A
    shorter word matches only a word that is itself plus one of
    :data:`SHORT_WORD_ENDINGS`, its last consonant doubled or not
    ("run"/"runs"/"running"); a one-letter word matches only itself.

    Args:
        claim_word: A case-folded token of the claim (``scoring.tokenize``).
        span_word: A case-folded token of the cited span.

    Returns:
        True when the span word accounts for the claim word.
    """
    if claim_word == span_word:
        return True
    if is_number_token(claim_word) or is_number_token(span_word):
        return False
    if claim_word in NUMBER_WORDS or span_word in NUMBER_WORDS:
        shorter, longer = sorted((claim_word, span_word), key=len)
        return longer == shorter + "s" and shorter in NUMBER_WORDS
    claim_negation, span_negation = negation_key(claim_word), negation_key(span_word)
    if claim_negation is not None or span_negation is not None:
        return claim_negation == span_negation
    if "-" in claim_word or "-" in span_word:
        claim_parts, span_parts = claim_word.split("-"), span_word.split("-")
        if len(claim_parts) != len(span_parts):
            return "".join(claim_parts) == "".join(span_parts)
        return all(map(_same_stem, claim_parts, span_parts))
    return _same_stem(claim_word, span_word)


def _same_stem(claim_word: str, span_word: str) -> bool:
    """The stem rule of :func:`same_word` for two words without hyphens."""
    if claim_word == span_word:
        return True
    claim_word, span_word = _unstressed(claim_word), _unstressed(span_word)
    shorter, longer = sorted((claim_word, span_word), key=len)
    if len(shorter) < MIN_STEM_CHARS:
        return _inflects(shorter, longer)
    shared = len(os.path.commonprefix((claim_word, span_word)))
    return shared >= STEM_PREFIX or shared >= STEM_SHARE * len(shorter)


_STRESS_MARKS = dict.fromkeys((0x0300, 0x0301))
"""Combining grave and acute accents: stress marks that move under inflection."""


def _unstressed(word: str) -> str:
    """``word`` without acute or grave accents, for stem comparison only.

    Spanish (and Catalan, Italian) move the written stress when a word inflects:
    "prohíbe"/"prohibidos", "está"/"estaban". Other marks are letters of their own
    and are kept: Swedish å ä ö, Spanish ñ. Equality and numbers are decided before.
    """
    if word.isascii():
        return word
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", word).translate(_STRESS_MARKS))


def _inflects(short: str, word: str) -> bool:
    """Whether ``word`` is ``short`` plus an inflection ending (a doubled last letter allowed)."""
    if len(short) < 2 or not word.startswith(short):
        return False
    ending = word[len(short) :]
    if ending in SHORT_WORD_ENDINGS:
        return True
    return ending[:1] == short[-1] and ending[1:] in SHORT_WORD_ENDINGS


def novel_content_words(claim: str, spans: Sequence[str]) -> list[str]:
    """Content words of ``claim`` that no word of ``spans`` accounts for, in order, deduplicated."""
    return EvidenceIndex(spans).novel(content_tokens(claim))


_SENTENCE_BREAK = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_ABBREVIATION_END = re.compile(
    r"(?:^|[\s(.])(?:[A-Za-z]|Mr|Mrs|Ms|Dr|St|Mt|Jr|Sr|No|Nos|Co|Inc|Ltd|vs|etc|Gen|Col|Lt|Sgt|Capt|Gov|Sen|Rep|Prof|Ft)\.$"
)
"""A piece of text ending in an abbreviation ("U.S.", "D.C.", "Dr."): the sentence goes on after it."""
_CLAUSE_BREAK = re.compile(r",\s(?!\d)|[;:]\s|[()\[\]{}\"“”]|\s[–—-]\s")
"""Where a claim is cut into clauses: not inside "1,000" (no space) nor in a date ("June 17, 1935")."""


def sentences(span: str) -> list[str]:
    """The sentences of a span: cut after ``.``/``!``/``?`` and whitespace or at a line break, not after an abbreviation."""
    pieces: list[str] = []
    for piece in _SENTENCE_BREAK.split(span):
        if not piece:
            continue
        if pieces and _ABBREVIATION_END.search(pieces[-1]) and not pieces[-1].endswith("\n"):
            pieces[-1] = f"{pieces[-1]} {piece}"
        else:
            pieces.append(piece)
    return pieces


def clauses(claim: str) -> list[list[str]]:
    """The claim's clauses as token lists (``scoring.tokenize``), empty clauses dropped."""
    return [tokens for part in _CLAUSE_BREAK.split(claim) if (tokens := tokenize(part))]


def _is_function(token: str) -> bool:
    return token in STOP_WORDS


def _negations(text: str) -> set[str]:
    return {key for key in map(negation_key, tokenize(text)) if key is not None}


@dataclass
class _Sentence:
    text: str
    tokens: list[str]
    content: set[str] = field(init=False)
    negations: set[str] = field(init=False)

    def __post_init__(self) -> None:
        self.content = {t for t in self.tokens if t not in STOP_WORDS}
        self.negations = {key for key in map(negation_key, self.tokens) if key is not None}


@dataclass
class EvidenceIndex:
    """The cited spans of one answer, tokenised and indexed once for all its claims.

    ``sentences[k]`` are the sentences of ``spans[k]`` (:func:`sentences`), each
    with its tokens. Word lookups (:meth:`matches`) use buckets keyed by the
    first two letters after stress marks are removed (every stem match shares
    them), plus one bucket for negations, so a claim word is compared with a few
    span words rather than with the whole vocabulary.
    """

    spans: Sequence[str]
    sentences: list[list[_Sentence]] = field(init=False)
    token_sets: list[set[str]] = field(init=False)
    _buckets: dict[str, set[str]] = field(init=False, repr=False)
    _cache: dict[str, frozenset[str]] = field(init=False, repr=False, default_factory=dict)
    _pieces: list[_Sentence] | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self.sentences = [[_Sentence(s, tokenize(s)) for s in sentences(span)] for span in self.spans]
        self.token_sets = [{t for sentence in span for t in sentence.tokens} for span in self.sentences]
        self._buckets = {}
        for token in set().union(*self.token_sets) if self.token_sets else ():
            self._buckets.setdefault(_bucket(token), set()).add(token)
        self._where: dict[str, set[tuple[int, int]]] = {}
        for span_number, span in enumerate(self.sentences):
            for sentence_number, sentence in enumerate(span):
                for token in sentence.tokens:
                    self._where.setdefault(token, set()).add((span_number, sentence_number))

    def sentences_with(self, claim_word: str) -> set[tuple[int, int]]:
        """``(span, sentence)`` numbers of the sentences holding a word that accounts for ``claim_word``."""
        found: set[tuple[int, int]] = set()
        for word in self.matches(claim_word):
            found |= self._where.get(word, set())
        return found

    def best_negations(self, claim_words: set[str]) -> set[str]:
        """Negations of the sentence sharing the most content words with the claim (first on ties; rule 3).

        Sentences here are cut at every ``.``/``!``/``?`` and whitespace, as
        :func:`best_sentence` does, not merged after abbreviations: a negation in
        the words after "U.S." is not held against a claim that stops there.
        """
        if self._pieces is None:
            self._pieces = [
                _Sentence(piece, tokenize(piece)) for span in self.spans for piece in _SENTENCE_BREAK.split(span)
            ]
        best, best_shared = None, -1
        for piece in self._pieces:
            shared = len(claim_words & piece.content)
            if shared > best_shared:
                best, best_shared = piece, shared
        return best.negations if best is not None else set()

    def matches(self, claim_word: str) -> frozenset[str]:
        """The span words that account for ``claim_word`` (:func:`same_word`)."""
        found = self._cache.get(claim_word)
        if found is None:
            candidates = self._buckets.get(_bucket(claim_word), set())
            if "-" in claim_word:
                candidates = set().union(*self._buckets.values())
            found = frozenset(w for w in candidates if same_word(claim_word, w))
            self._cache[claim_word] = found
        return found

    def novel(self, words: Sequence[str]) -> list[str]:
        """Words (content tokens of a claim) no span word accounts for, in order, deduplicated."""
        novel: list[str] = []
        for word in words:
            if word not in novel and not self.matches(word):
                novel.append(word)
        return novel


def _bucket(token: str) -> str:
    key = negation_key(token)
    if key is not None:
        return "\0not"
    return _unstressed(token.split("-")[0])[:2]


@dataclass(frozen=True)
class Alignment:
    """How a claim lines up with one sentence window: ``ok``, and the reason when not."""

    ok: bool
    reason: str
    matched: int = 0
    """Content tokens of the claim matched in this window (to choose the window shown in a reason)."""


@dataclass(frozen=True)
class _Window:
    tokens: list[str]
    seam: int | None = None
    """Where the second sentence starts, for a window of two sentences."""
    adjacent: bool = False
    """Two adjacent sentences of one span (else: one sentence of each of two cited spans)."""


def align_claim(claim: str, index: EvidenceIndex) -> Alignment:
    """Whether ``claim`` aligns in order with one sentence window of the cited spans (module docstring, rule 2).

    Windows are single sentences of a span; when none holds every content
    token of the claim, two adjacent sentences of a span (the claim's first
    part from the first, its rest from the start of the second: "The Lincoln
    Memorial … Dedicated in 1922, it …" gives "The Lincoln Memorial was
    dedicated in 1922"); and, when two or more spans are cited, one sentence of
    each of two of them, in citation order. Only windows in which every content
    token of the claim has a candidate are aligned. In each window the claim
    is tried whole, then clause by clause (:func:`clauses`), then with one
    clause cut once more into two parts that may trade places ("The sun is
    white | when viewed from space" against "When viewed from space the sun
    looks white").

    Args:
        claim: The claim without markers.
        index: The cited spans (:class:`EvidenceIndex`).

    Returns:
        The first window that aligns (``ok``), else the reason from the window
        that matched most of the claim's content tokens.
    """
    parts = clauses(claim)
    content = [t for tokens in parts for t in tokens if not _is_function(t)]
    if not content:
        return Alignment(True, "no content words")
    wanted = set(content)
    holding: dict[tuple[int, int], set[str]] = {}
    for word in wanted:
        for place in index.sentences_with(word):
            holding.setdefault(place, set()).add(word)
    per_sentence = [(sp, se, have) for (sp, se), have in sorted(holding.items())]
    windows = [_Window(index.sentences[sp][se].tokens) for sp, se, have in per_sentence if have == wanted]
    if not windows:
        for (a_span, a_number, a_have), (b_span, b_number, b_have) in zip(per_sentence, per_sentence[1:]):
            if b_span == a_span and b_number == a_number + 1 and a_have | b_have == wanted:
                first, second = index.sentences[a_span][a_number].tokens, index.sentences[b_span][b_number].tokens
                windows.append(_Window(first + second, len(first), adjacent=True))
    if len(index.sentences) > 1:
        for a_span, a_number, a_have in per_sentence:
            for b_span, b_number, b_have in per_sentence:
                if b_span > a_span and a_have | b_have == wanted and a_have != wanted and b_have != wanted:
                    first, second = index.sentences[a_span][a_number].tokens, index.sentences[b_span][b_number].tokens
                    windows.append(_Window(first + second, len(first)))
    best = Alignment(False, f"no sentence of the cited evidence holds all of {sorted(wanted)}")
    for window in windows:
        for pieces, cut in _piecings(parts):
            result = _align_window(pieces, window, index, cut)
            if result.ok:
                return result
            if result.matched > best.matched:
                best = result
    return best


def _piecings(parts: list[list[str]]) -> Iterator[tuple[list[list[str]], int | None]]:
    """The ways a claim is tried: whole, by clauses, by clauses with one clause cut in two, then as a passive.

    Yields ``(pieces, cut)``: ``cut`` is the number of the first half of the
    clause cut in two (the second half is ``cut + 1``), else None. The halves
    may trade places, but neither may straddle the other (``_gap_problem``):
    "in Paris than in New York" is not "in New York than in Paris".

    The passive piecing cuts a clause "B is run by A" into "B" / "is run" /
    "by A", so that it can align with "A runs B" (the three pieces reversed).
    """
    yield [[t for tokens in parts for t in tokens]], None
    if len(parts) > 1:
        yield parts, None
    for k, tokens in enumerate(parts):
        for cut in range(1, len(tokens)):
            head, tail = tokens[:cut], tokens[cut:]
            if all(map(_is_function, head)) or all(map(_is_function, tail)):
                continue
            yield parts[:k] + [head, tail] + parts[k + 1 :], k
    for k, tokens in enumerate(parts):
        for be in (i for i, t in enumerate(tokens) if t in COPULAS):
            by = next((i for i in range(be + 2, len(tokens)) if tokens[i] in AGENT_WORDS), None)
            pieces = [tokens[:be], tokens[be:by], tokens[by:]] if by is not None else []
            if pieces and not any(all(map(_is_function, piece)) for piece in pieces):
                yield parts[:k] + pieces + parts[k + 1 :], None


def _align_window(pieces: list[list[str]], window: _Window, index: EvidenceIndex, cut: int | None = None) -> Alignment:
    """Align every piece in order inside the window (distinct window tokens per piece), then check the gaps.

    ``cut``: pieces ``cut`` and ``cut + 1`` are the two halves of one clause (``_piecings``).
    """
    tokens_of = window.tokens
    used: dict[int, int] = {}  # window position -> piece number
    pairs_of: list[list[tuple[int, int]]] = []
    matched = 0
    missing: str | None = None
    for k, tokens in enumerate(pieces):
        pairs = _lcs(tokens, tokens_of, used, index)
        for _, j in pairs:
            used[j] = k
        pairs_of.append(pairs)
        got = {i for i, _ in pairs}
        for i, token in enumerate(tokens):
            if _is_function(token):
                continue
            if i in got:
                matched += 1
            elif missing is None:
                missing = token
    if missing is not None:
        return Alignment(False, f"{missing!r} has no place in the cited sentence in the claim's order", matched)
    for k, tokens in enumerate(pieces):
        if sum(not _is_function(t) for t in tokens) >= 2 or not pairs_of[k]:
            continue
        mine = [j for _, j in pairs_of[k]]
        if 0 < k < len(pieces) - 1 and pairs_of[k - 1] and pairs_of[k + 1]:
            # Between its two neighbours, in either direction ("A runs B" for "B is run by A").
            before, after = [j for _, j in pairs_of[k - 1]], [j for _, j in pairs_of[k + 1]]
            placed = all(max(before) < j < min(after) for j in mine) or all(max(after) < j < min(before) for j in mine)
        else:
            earlier = [j for pairs in pairs_of[:k] for _, j in pairs]
            later = [j for pairs in pairs_of[k + 1 :] for _, j in pairs]
            low, high = max(earlier, default=-1), min(later, default=len(tokens_of))
            placed = all(low < j < high for j in mine)
        if not placed:
            word = next(t for t in tokens if not _is_function(t))
            return Alignment(False, f"{word!r} is not where the claim puts it", matched)
    if window.adjacent and window.seam is not None:
        problem = _seam_problem(pieces, pairs_of, tokens_of, window.seam)
        if problem:
            return Alignment(False, problem, matched)
    for k, tokens in enumerate(pieces):
        sibling = None if cut is None or k not in (cut, cut + 1) else (cut + 1 if k == cut else cut)
        problem = _gap_problem(tokens, pairs_of[k], tokens_of, used, k, window, sibling)
        if problem:
            return Alignment(False, problem, matched)
    return Alignment(True, "aligned in order", matched)


def _seam_problem(
    pieces: list[list[str]], pairs_of: list[list[tuple[int, int]]], window: list[str], seam: int
) -> str | None:
    """For two adjacent sentences: the claim's words from the first all come before those from the second,
    and the second is picked up at its start (only function words of it before its first matched word)."""
    offsets, offset = [], 0
    for tokens in pieces:
        offsets.append(offset)
        offset += len(tokens)
    first = [offsets[k] + i for k, pairs in enumerate(pairs_of) for i, j in pairs if j < seam]
    second = [(offsets[k] + i, j) for k, pairs in enumerate(pairs_of) for i, j in pairs if j >= seam]
    if not second:
        return None
    if first and max(first) > min(i for i, _ in second):
        return "mixes the words of two sentences"
    start = min(j for _, j in second)
    if not all(map(_is_function, window[seam:start])):
        return f"runs on into the next sentence at {window[start]!r}"
    return None


def _lcs(tokens: list[str], window: list[str], used: Mapping[int, int], index: EvidenceIndex) -> list[tuple[int, int]]:
    """In-order pairs (claim position, window position): the most content words, then function words, then compact.

    Window positions in ``used`` are taken by another piece. A content word
    matches by :func:`same_word`, a function word only itself. Among
    alignments with as many matches, the one that skips the fewest window
    tokens between its first and last match wins (a repeated word is taken
    where the rest of the piece is, not at its first occurrence).
    """
    m, n = len(tokens), len(window)
    skip = 1
    function_weight = n + 1  # all skips together weigh less than one match
    content_weight = (m + 1) * function_weight  # one content word outweighs all function words
    weight = []
    for c in tokens:
        if _is_function(c):
            weight.append([function_weight if j not in used and window[j] == c else 0 for j in range(n)])
        else:
            found = index.matches(c)
            weight.append(
                [content_weight if j not in used and (window[j] == c or window[j] in found) else 0 for j in range(n)]
            )
    # inside[i][j] / outside[i][j]: best score of tokens[i:] against window[j:], after a match / before any.
    inside = [[0] * (n + 1) for _ in range(m + 1)]
    outside = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(m - 1, -1, -1):
        row, ins, out, ins_below, out_below = weight[i], inside[i], outside[i], inside[i + 1], outside[i + 1]
        for j in range(n - 1, -1, -1):
            take = row[j] + ins_below[j + 1] if row[j] else 0
            ins[j] = max(take, ins_below[j], ins[j + 1] - skip, 0)
            out[j] = max(take, out_below[j], out[j + 1])
    pairs: list[tuple[int, int]] = []
    i = j = 0
    table = outside
    while i < m and j < n:
        here, w = table[i][j], weight[i][j]
        if here == 0 and table is inside:
            break
        if w and here == w + inside[i + 1][j + 1]:
            pairs.append((i, j))
            i, j, table = i + 1, j + 1, inside
        elif here == table[i + 1][j]:
            i += 1
        else:
            j += 1
    return pairs


def _gap_problem(
    tokens: list[str],
    pairs: list[tuple[int, int]],
    window: list[str],
    used: Mapping[int, int],
    piece: int,
    where: _Window,
    sibling: int | None = None,
) -> str | None:
    """The first substitution or meaning-changing omission in the gaps of one aligned piece, or None.

    A gap lies between two matched content words of the piece (or before the
    first, back to the previous word another piece uses or the window's start,
    or after the last, likewise). The claim's unmatched words there are function
    words (every content word is matched). They are *substituted* for the
    window's left-out content words there unless as many of the window's
    left-out function words explain them (article drift), or a form of "be"
    stands for a :data:`LINKING_VERBS` verb ("might be cold" / "might feel
    cold"). A content word left out after the seam of two cited spans that the
    claim uses already (a repeated subject: "Alpha is led by Ingrid. Alpha has
    a budget" → "Alpha is led by Ingrid and has a budget") is not substituted.
    Inside the aligned stretch, a left-out negation or :data:`MEANING_MODIFIERS`
    word changes the meaning; and a piece may straddle another piece ("honor
    [the 16th President …], Abraham Lincoln") only when nothing but that piece
    and function words lies in between. Around its ``sibling`` (the other half
    of a clause the verifier cut, not the claim's punctuation) nothing else may
    lie: "El invierno [en Nueva York] es más frío" supports "El invierno es más
    frío | en Nueva York" (a phrase moved whole), but "hace más frío en [Nueva
    York] que en París" does not support "hace más frío en París | que en Nueva
    York", where "que en" is left between: the two places traded roles.
    """
    anchors = [(i, j) for i, j in pairs if not _is_function(tokens[i])]
    if not anchors:
        return None
    matched_words = {window[j] for _, j in pairs}
    before = [j for j in used if j < anchors[0][1] and used[j] != piece]
    after = [j for j in used if j > anchors[-1][1] and used[j] != piece]
    bounds = [(-1, max(before, default=-1))] + anchors + [(len(tokens), min(after, default=len(window)))]
    repeat_from = where.seam if where.seam is not None and not where.adjacent else len(window)
    placed = dict(pairs)
    for (i0, j0), (i1, j1) in zip(bounds, bounds[1:]):
        # A function word matched outside this gap of the window is as good as inserted.
        inserted = [tokens[i] for i in range(i0 + 1, i1) if not (i in placed and j0 < placed[i] < j1)]
        gap = [j for j in range(j0 + 1, j1) if j not in used]
        dropped = [window[j] for j in gap]
        inner = i0 >= 0 and i1 < len(tokens)
        # Outside the aligned stretch only the two words next to it count ("the former president" → "the president").
        near = gap if inner else [j for j in gap if (j >= j1 - 2 if i0 < 0 else j <= j0 + 2)]
        # Negations outside the stretch are rule 3's (the "No." of "No. 1" is not one).
        lost = [
            window[j] for j in near if window[j] in MEANING_MODIFIERS or (inner and negation_key(window[j]) is not None)
        ]
        if lost:
            return f"leaves out {lost[0]!r} next to {tokens[i1 if i0 < 0 else i0]!r}"
        if inner:
            straddled = {used[j] for j in range(j0 + 1, j1) if used.get(j, piece) != piece}
            if sibling in straddled and gap:
                return f"splits {tokens[i0]!r} … {tokens[i1]!r} around words the claim says elsewhere (roles traded)"
            if straddled and any(not _is_function(w) for w in dropped):
                return f"spreads {tokens[i0]!r} … {tokens[i1]!r} over words the claim does not say"
        if not inserted:
            continue
        dropped_content = [
            window[j]
            for j in gap
            if not _is_function(window[j]) and not (j >= repeat_from and window[j] in matched_words)
        ]
        explained = sum(map(_is_function, dropped))
        if any(w in COPULAS for w in inserted) and any(w in LINKING_VERBS for w in dropped_content):
            explained += 1
            dropped_content = [w for w in dropped_content if w not in LINKING_VERBS]
        if dropped_content and len(inserted) > explained:
            return f"{inserted[0]!r} stands where the cited sentence says {dropped_content[0]!r}"
    return None


def best_sentence(claim: str, spans: Sequence[str]) -> str:
    """The sentence of ``spans`` sharing the most content words with ``claim`` (first on ties)."""
    claim_words = set(content_tokens(claim))
    best, best_shared = "", -1
    for span in spans:
        for sentence in _SENTENCE_BREAK.split(span):
            shared = len(claim_words & set(content_tokens(sentence)))
            if shared > best_shared:
                best, best_shared = sentence, shared
    return best


def _true_by_scoring(claim_tokens: set[str], truths: Sequence[set[str]]) -> bool:
    """``scoring.claim_is_true`` on token sets already computed (same rule: coverage ≥ 0.6, numbers, negations)."""
    if not claim_tokens:
        return False
    numbers = {t for t in claim_tokens if is_number_token(t)}
    negations = {negation_key(t) for t in claim_tokens} - {None}
    for truth in truths:
        if len(claim_tokens & truth) / len(claim_tokens) < COVERAGE_THRESHOLD:
            continue
        if numbers <= truth and negations <= {negation_key(t) for t in truth} - {None}:
            return True
    return False


@dataclass(frozen=True)
class ClaimCheck:
    """The verdict on one claim and the reason, for logs and tests."""

    verdict: str
    """``supported``, ``unsupported`` or ``contradicted`` (``docs/target-contract.md``)."""
    reason: str
    """Plain-language why."""


def verify_claim(claim_text: str, markers: Sequence[str], evidence: Mapping[str, str]) -> ClaimCheck:
    """Judge one claim against the evidence it cites (module docstring for the rule).

    Args:
        claim_text: the claim as it appears in the answer (markers may be inside).
        markers: the markers the claim carries, e.g. ``["S1"]``.
        evidence: marker → the cited span's text (the canonical-text slice).

    Returns:
        The verdict and its reason.
    """
    return verify_claims([(claim_text, list(markers))], evidence)[0]


def verify_claims(claims: Sequence[tuple[str, Sequence[str]]], evidence: Mapping[str, str]) -> list[ClaimCheck]:
    """Judge every claim of one answer (module docstring for the rule); each cited span is indexed once.

    A pure function of picklable arguments, so ``app`` runs it in a process pool.

    Args:
        claims: ``(claim text, markers)`` per claim, in answer order.
        evidence: marker → the cited span's text.

    Returns:
        One :class:`ClaimCheck` per claim, in the same order.
    """
    indexes: dict[tuple[str, ...], EvidenceIndex] = {}
    checks = []
    for claim_text, markers in claims:
        cited = tuple(m for m in dict.fromkeys(markers) if m in evidence)
        if not cited:
            why = "cites no evidence" if not markers else f"cites unknown markers {list(markers)}"
            checks.append(ClaimCheck("unsupported", f"the claim {why}"))
            continue
        index = indexes.get(cited)
        if index is None:
            index = indexes[cited] = EvidenceIndex([evidence[m] for m in cited])
        checks.append(_check(strip_markers(claim_text), cited, index))
    return checks


def _check(claim: str, cited: Sequence[str], index: EvidenceIndex) -> ClaimCheck:
    names = ", ".join(cited)
    truths = index.token_sets + ([set().union(*index.token_sets)] if len(index.token_sets) > 1 else [])
    covered = _true_by_scoring(set(tokenize(claim)), truths)
    novel = index.novel(content_tokens(claim))
    if covered and not novel:
        dropped = index.best_negations(set(content_tokens(claim))) - _negations(claim)
        if dropped:
            return ClaimCheck("contradicted", f"drops the negation {sorted(dropped)} of {names}")
        alignment = align_claim(claim, index)
        if not alignment.ok:
            return ClaimCheck("unsupported", f"does not follow {names} in order: {alignment.reason}")
        return ClaimCheck("supported", f"covered by {names}")
    if novel and all(is_number_token(w) or negation_key(w) is not None for w in novel):
        return ClaimCheck("contradicted", f"{names} do not carry {novel}")
    if novel:
        return ClaimCheck("unsupported", f"words not in {names}: {novel}")
    return ClaimCheck("unsupported", f"{names} do not cover the claim")
