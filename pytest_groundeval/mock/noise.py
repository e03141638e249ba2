"""Seeded noise on the mock's generations: a reproducible stand-in for a real model's run-to-run variation.

With noise probability ``P`` (``--eval-mock-noise``, ``groundeval mock --noise``), each
generation request is noised with probability ``P``: its answer either loses the
support of one cited evidence block (``drop``) or has one number changed
(``number``). Whether a request is noised, and how, is decided by SHA-256 of the
seed, the attempt number and a canonical key of the request (its question and the
evidence blocks it was given), so the same run gives the same noise in every
process and on every Python version, and attempts of one item differ.

Everything here is a pure function, so a benchmark can tell which items a run
with a given seed noises without starting a server (``noise_for``,
``noised_answer``). The rules are documented in docs/mock.md, "Noise".
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from pytest_groundeval.core import contract
from pytest_groundeval.mock import behaviour

NoiseKind = Literal["drop", "number"]
"""What a noise draw tries first: lose a cited block's support, or change a number."""

_DRAW_SCALE = float(1 << 64)
_MARKER_RE = re.compile(contract.MARKER_IN_TEXT_PATTERN)
# A number as docs/scoring.md tokenises it (digits with inner "." or "," groups), ASCII digits only,
# without the sign or "%" the scorer also keeps: those stay as they are.
_NUMBER_RE = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
_DIGIT_SHIFT = 5
"""A changed number's last digit ``d`` becomes ``(d + 5) % 10``: never the same digit."""


@dataclass(frozen=True)
class NoiseSettings:
    """How noisy the mock's generations are (docs/mock.md, "Noise").

    Raises:
        ValueError: ``probability`` is not a finite number in [0, 1], or ``seed`` is not an int.
    """

    probability: float = 0.0
    """Chance that one generation request is noised, in [0, 1]; 0 turns noise off."""
    seed: int = 0
    """Seed of the draws: runs with the same seed (and attempt numbers) get the same noise."""

    def __post_init__(self) -> None:
        p = self.probability
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or not 0 <= p <= 1:
            raise ValueError(f"noise probability must be a number in [0, 1], not {p!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"noise seed must be an int, not {self.seed!r}")


NO_NOISE = NoiseSettings()
"""Noise off: every generation is the deterministic one."""


@dataclass(frozen=True)
class Noise:
    """The draw for one noised request: which change to try first, and which candidate it picks."""

    kind: NoiseKind
    """``drop`` or ``number``; when the answer offers no candidate for it, the other is tried."""
    pick: int
    """A number in [0, 2**32): the candidate changed is ``candidates[pick % len(candidates)]``."""


@dataclass(frozen=True)
class AppliedNoise:
    """What the noise changed in one answer, as the request log records it."""

    kind: NoiseKind
    """``drop`` or ``number``."""
    before: str
    """The dropped block's marker name (``S1``) or the number as it was (``1844``)."""
    after: str
    """The marker name cited instead (``""``: left uncited), or the changed number (``1849``)."""

    def describe(self) -> str:
        """``drop S1->S2``, ``drop S1->uncited`` or ``number 1844->1849`` (the log's ``noise`` field)."""
        return f"{self.kind} {self.before}->{self.after or 'uncited'}"


def request_key(question: str, blocks: list[tuple[str, str]]) -> str:
    """The canonical key of a generation request: its question and every evidence block, in order.

    Args:
        question: The request's question (``behaviour.question_of``).
        blocks: Its evidence blocks ``[(marker, text)]`` (``behaviour.evidence_blocks``, all of them).

    Returns:
        Compact JSON ``[question, [[marker, text], ...]]``: equal for requests that ask the same
        question over the same evidence, whatever else (system prompt, model, streaming) differs.
    """
    return json.dumps([question, [list(block) for block in blocks]], ensure_ascii=False, separators=(",", ":"))


def noise_for(probability: float, seed: int, key: str, attempt: int = 0) -> Noise | None:
    """Decide whether one request is noised, and how (docs/mock.md, "Noise").

    ``h = SHA-256("groundeval-noise\\0<seed>\\0<attempt>\\0" + key)`` (UTF-8). The request
    is noised when ``int(h[0:8]) / 2**64 < probability`` (big-endian), so raising
    the probability only adds noised requests; ``kind`` is ``drop`` when ``h[8]`` is
    even, else ``number``; ``pick`` is ``int(h[9:13])``. SHA-256 rather than
    Python's ``hash()``: the draw must agree across processes and Python versions.

    Args:
        probability: Chance of noise in [0, 1] (not checked here: see ``NoiseSettings``).
        seed: The run's seed.
        key: The request's canonical key (:func:`request_key`).
        attempt: The attempt number (``X-Groundeval-Attempt``; 0 when absent).

    Returns:
        The draw, or None when this request is not noised.
    """
    if probability <= 0:
        return None
    prefix = f"groundeval-noise\0{seed}\0{attempt}\0".encode()
    digest = hashlib.sha256(prefix + key.encode("utf-8", "surrogatepass")).digest()
    if int.from_bytes(digest[:8], "big") / _DRAW_SCALE >= probability:
        return None
    kind: NoiseKind = "drop" if digest[8] % 2 == 0 else "number"
    return Noise(kind, int.from_bytes(digest[9:13], "big"))


def apply_noise(answer: str, blocks: list[tuple[str, str]], noise: Noise) -> tuple[str, AppliedNoise | None]:
    """Apply a draw to an answer: ``noise.kind`` first, the other kind when it has no candidate.

    - ``drop``: the candidates are the distinct markers the answer cites, in order. The
      picked block loses its support: every citation of it is replaced by the marker of
      the next evidence block of the prompt (wrapping round to the first), so its
      sentences now cite a block that does not state them; with no other block in the
      prompt its citations are removed (the sentences are left uncited).
    - ``number``: the candidates are the numbers of the answer outside citation markers
      (ASCII digits with inner ``.`` or ``,`` groups); the picked one has its last digit
      ``d`` replaced by ``(d + 5) % 10`` (``1844`` -> ``1849``, ``3,5`` -> ``3,0``).

    Args:
        answer: The deterministic answer (``behaviour.generate_answer``).
        blocks: The request's evidence blocks ``[(marker, text)]``, all of them, in prompt order.
        noise: The draw (:func:`noise_for`).

    Returns:
        ``(answer, what changed)``; the answer unchanged and None when neither kind has a candidate.
    """
    kinds: tuple[NoiseKind, NoiseKind] = ("drop", "number") if noise.kind == "drop" else ("number", "drop")
    for kind in kinds:
        changed = _drop(answer, blocks, noise.pick) if kind == "drop" else _change_number(answer, noise.pick)
        if changed is not None:
            return changed
    return answer, None


def noised_answer(
    messages: list[Any], answer: str, settings: NoiseSettings, attempt: int = 0
) -> tuple[str, AppliedNoise | None]:
    """The answer of a generation request under ``settings``: draw (:func:`noise_for`), then apply it.

    Args:
        messages: The request's chat messages.
        answer: Their deterministic answer (``behaviour.generate_answer(messages)``).
        settings: Probability and seed.
        attempt: The attempt number (0 when the request carried none).

    Returns:
        ``(answer, what changed)``: the answer unchanged and None when the request is not noised
        or its answer offers nothing to change.
    """
    if not settings.probability:
        return answer, None
    blocks = behaviour.evidence_blocks(messages)
    noise = noise_for(
        settings.probability, settings.seed, request_key(behaviour.question_of(messages), blocks), attempt
    )
    if noise is None:
        return answer, None
    return apply_noise(answer, blocks, noise)


def parse_attempt(value: str | None) -> int:
    """The attempt number of a request's ``X-Groundeval-Attempt`` header: a whole number >= 0; 0 when absent.

    Raises:
        ValueError: the header is present but not ASCII digits (its message names the header and the value).
    """
    if value is None:
        return 0
    text = value.strip()
    if not text.isascii() or not text.isdigit():
        raise ValueError(f"{contract.ATTEMPT_HEADER} must be a whole number >= 0, got {value!r}")
    return int(text)


def _drop(answer: str, blocks: list[tuple[str, str]], pick: int) -> tuple[str, AppliedNoise] | None:
    cited = list(dict.fromkeys(_MARKER_RE.findall(answer)))
    if not cited:
        return None
    dropped = cited[pick % len(cited)]
    markers = list(dict.fromkeys(marker for marker, _ in blocks))
    if dropped in markers:
        at = markers.index(dropped)
        markers = markers[at + 1 :] + markers[:at]
    others = [marker for marker in markers if marker != dropped]
    if others:
        return answer.replace(f"[{dropped}]", f"[{others[0]}]"), AppliedNoise("drop", dropped, others[0])
    uncited = re.sub(r"\s*\[" + re.escape(dropped) + r"\]", "", answer)
    return uncited, AppliedNoise("drop", dropped, "")


def _change_number(answer: str, pick: int) -> tuple[str, AppliedNoise] | None:
    in_markers = [m.span() for m in _MARKER_RE.finditer(answer)]
    numbers = [m for m in _NUMBER_RE.finditer(answer) if not any(start <= m.start() < end for start, end in in_markers)]
    if not numbers:
        return None
    match = numbers[pick % len(numbers)]
    before = match.group()
    after = before[:-1] + str((int(before[-1]) + _DIGIT_SHIFT) % 10)
    return answer[: match.start()] + after + answer[match.end() :], AppliedNoise("number", before, after)
