"""Sentence decomposition with exact UTF-8 byte spans (docs/mock.md)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_groundeval.core import contract
from pytest_groundeval.mock import decompose
from pytest_groundeval.mock.behaviour import cite_block, count_tokens


def texts_and_markers(draft: str) -> list[tuple[str, list[str]]]:
    raw = draft.encode()
    claims = decompose(draft)
    for claim in claims:
        assert raw[claim["start"] : claim["end"]].decode() == claim["text"]
        assert claim["text"] == claim["text"].strip()
    return [(c["text"], c["markers"]) for c in claims]


@pytest.mark.parametrize(
    ("draft", "expected"),
    [
        (
            "The sky is blue. Grass is green!  Is it? ",
            [("The sky is blue.", []), ("Grass is green!", []), ("Is it?", [])],
        ),
        (
            "The Moon is 384.400 km away. Pi is about 3.5 here [S1].",
            [("The Moon is 384.400 km away.", []), ("Pi is about 3.5 here [S1].", ["S1"])],
        ),
        (
            "Alpha shipped the record. [1] Beta followed.[2][S3] Gamma",
            [("Alpha shipped the record. [1]", ["1"]), ("Beta followed.[2][S3]", ["2", "S3"]), ("Gamma", [])],
        ),
        (
            "Göteborg är större än Malmö. [S1] [S2] Åsa bor i Växjö.",
            [("Göteborg är större än Malmö. [S1] [S2]", ["S1", "S2"]), ("Åsa bor i Växjö.", [])],
        ),
        (
            "東京は日本の首都です。大阪は大きい都市です！本当？[S1]",
            [("東京は日本の首都です。", []), ("大阪は大きい都市です！", []), ("本当？[S1]", ["S1"])],
        ),
        ('He said "stop." Then left.', [('He said "stop."', []), ("Then left.", [])]),
        ("Heading\n\nBody text. [S1]", [("Heading", []), ("Body text. [S1]", ["S1"])]),
        ("", []),
        ("   ", []),
    ],
)
def test_decomposition_spans_and_markers(draft, expected):
    assert texts_and_markers(draft) == expected


def test_byte_offsets_are_bytes_not_characters():
    claims = decompose("Ää. Öö.")
    assert [(c["start"], c["end"]) for c in claims] == [(0, 5), (6, 11)]


@given(st.text(alphabet=st.sampled_from(list("aåä東 .!?。[]S1\n3")), max_size=60))
def test_spans_always_slice_the_draft(draft):
    raw = draft.encode()
    previous_end = 0
    for claim in decompose(draft):
        assert previous_end <= claim["start"] < claim["end"] <= len(raw)
        assert raw[claim["start"] : claim["end"]].decode() == claim["text"]
        previous_end = claim["end"]


@given(
    st.lists(st.text(alphabet=st.sampled_from(list("abc åä東3.5")), min_size=1, max_size=30), min_size=1, max_size=3)
)
def test_cited_blocks_decompose_to_their_marker(blocks):
    blocks = [b for b in blocks if b.strip(" .")]
    answer = " ".join(cite_block(f"S{i + 1}", b.strip()) for i, b in enumerate(blocks))
    for claim in decompose(answer):
        assert len(claim["markers"]) == 1, (answer, claim)


def test_token_count_rule():
    assert count_tokens("Hej på dig, Åsa!") == 6
    assert count_tokens("") == 0


@given(st.text(alphabet=st.sampled_from(list("ab .!?[]S12")), max_size=60))
def test_claim_markers_are_the_contract_markers_of_the_claim_text(draft):
    # One marker pattern for the project: what the mock reports as a claim's markers
    # is exactly what contract.MARKER_IN_TEXT_PATTERN finds in the claim's text.
    for claim in decompose(draft):
        assert claim["markers"] == list(dict.fromkeys(re.findall(contract.MARKER_IN_TEXT_PATTERN, claim["text"])))


TOKEN_RULE = re.compile(r"\w+|[^\w\s]")  # docs/mock.md, "Token counting"


@given(
    st.text() | st.text(alphabet=st.sampled_from(list("ab_1 .,\t\n\x1c\x85\xa0\u2028\u3000é\u0301ö東。–”’ß٣😀İ\ud800")))
)
def test_fast_token_count_equals_the_documented_regex_rule(text):
    assert count_tokens(text) == len(TOKEN_RULE.findall(text))
