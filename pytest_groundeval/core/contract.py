"""Constants of the contract shared by the mock provider and any target (docs/target-contract.md, docs/mock.md).

A target that wants the mock to decompose a draft into claims sends a chat
completion whose *system* message starts with ``DECOMPOSITION_PROMPT`` (or whose
``response_format.json_schema.name`` is ``DECOMPOSITION_SCHEMA_NAME``) and whose
last user message is the draft. The mock answers with a JSON object as the
message content::

    {"claims": [{"text": str, "start": int, "end": int, "markers": ["S1", ...]}]}

``start``/``end`` are UTF-8 byte offsets into the draft; ``markers`` are the
marker names (without brackets) the sentence carries.
"""

from __future__ import annotations

import re

DECOMPOSITION_PROMPT = (
    "Decompose the draft answer into atomic claims. "
    'Return JSON {"claims": [{"text", "start", "end", "markers"}]} '
    "with UTF-8 byte offsets into the draft."
)
"""System-message prefix that selects the mock's decomposition behaviour."""

DECOMPOSITION_SCHEMA_NAME = "claim_decomposition"
"""``response_format.json_schema.name`` that also selects decomposition."""

FAULT_HEADER = "X-Groundeval-Fault"
"""Request header the mock reads for fault injection (see ``pytest_groundeval.mock``)."""

FAULT_MODEL_SEPARATOR = "+fault="
"""Model-name suffix alternative to the header: ``mock-generate+fault=500``."""

TEMPORAL_LABEL_SEPARATOR = "__ge_"
"""Per-run, per-item suffix separator the harness appends to temporal labels (docs/dataset.md)."""

CLAIM_VERDICTS = ("supported", "unsupported", "contradicted", "unverifiable")
"""Claim verdicts a target may return for its claims (docs/target-contract.md); the citation judge's verdicts
are another vocabulary (``core.judging.JUDGE_VERDICTS``)."""

MARKER_NAME_PATTERN = r"^S?[0-9]+$"
"""A citation marker's name as written inside the brackets: ``S1`` or ``1`` (docs/citation.md); a source
whose marker is not one can never be cited."""

MARKER_IN_TEXT_PATTERN = r"\[(S?\d+)\]"
"""A citation marker as it appears in an answer: ``[S1]`` (evidence block) or ``[1]`` (numbered
source); group 1 is the marker's name (``MARKER_NAME_PATTERN``)."""

_MARKER_RUN_RE = re.compile(r"\s*" + MARKER_IN_TEXT_PATTERN)


def strip_markers(text: str) -> str:
    """Remove citation markers (and the space before each) from claim text.

    Markers are citation syntax, not content: a claim is judged on its words
    (docs/scoring.md), so ``"Det har fyrtio anställda. [S1]"`` is judged as
    ``"Det har fyrtio anställda."``.
    """
    return _MARKER_RUN_RE.sub("", text).strip()


RUN_ID_HEADER = "X-Groundeval-Run-Id"
"""Request header naming the run (its id in the history, docs/history.md) on every target call of an item."""

ITEM_ID_HEADER = "X-Groundeval-Item-Id"
"""Request header naming the dataset item a target call belongs to (absent on corpus ingests)."""

ATTEMPT_HEADER = "X-Groundeval-Attempt"
"""Request header numbering the attempt (1..N) a target call belongs to under ``--eval-repeat N``, N > 1
(docs/target-contract.md, "Run and item ids"); absent without repeats. The mock provider draws its
seeded noise from it, reading an absent header as 0 (docs/mock.md, "Noise"), so attempts of one item
differ; the reference target forwards it to its provider."""

RUN_ID_ENV = "GROUNDEVAL_RUN_ID"
"""Environment variable a spawned target gets: the session id (docs/target-contract.md, "Run and item ids")."""


def dataset_run_id(session_id: str, dataset_key: str) -> str:
    """The run id of one dataset of a session: 32 lowercase hex digits (docs/history.md).

    A session gates each dataset (each manifest) on its own, so each has its own run
    in the history. The id is derived, so the controller and every xdist worker name
    the same run without talking to each other.

    Args:
        session_id: The session id (``GROUNDEVAL_RUN_ID``).
        dataset_key: The manifest's part of the node ids, e.g. ``datasets/v1/manifest.json``.
    """
    import hashlib

    return hashlib.sha256(f"{session_id}\0{dataset_key}".encode()).hexdigest()[:32]
