"""Unit and property tests for pytest_groundeval.scoring (docs/scoring.md)."""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groundeval.core.scoring import (
    COVERAGE_THRESHOLD,
    NEGATIONS,
    STOP_WORDS,
    best_truth,
    claim_coverage,
    claim_is_true,
    content_tokens,
    evidence_found,
    is_negation,
    is_number_token,
    negation_key,
    normalize_text,
    tokenize,
)

# --- normalize_text -----------------------------------------------------------------


def test_normalize_text_folds_case_collapses_whitespace_and_strips():
    assert normalize_text("  The\tQuick \n\n BROWN  fox ") == "the quick brown fox"


def test_normalize_text_is_nfc_and_casefolded():
    nfd = unicodedata.normalize("NFD", "Straße Ångström")
    assert normalize_text(nfd) == "strasse ångström"
    assert normalize_text(nfd) == unicodedata.normalize("NFC", normalize_text(nfd))


_spaced_texts = st.text(
    alphabet=st.one_of(st.characters(), st.sampled_from(" \t\n\r\x0b\x0c\x1c\x85\xa0\u2003\u3000")), max_size=40
)


@given(_spaced_texts)
@settings(max_examples=300)
def test_normalize_text_is_the_documented_rule(text):
    # NFC of the case-folded NFC text, every run of white space (what `\s` matches) one space, stripped.
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
    assert normalize_text(text) == re.sub(r"\s+", " ", folded).strip()


# --- tokenize: numbers -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("rose 3.5% today", "3.5%"),
        ("steg 3,5 % i dag", "3,5%"),
        ("about 384.400 km away", "384.400"),
        ("1,000 people", "1,000"),
        ("rose 3.5 % today", "3.5%"),
        ("it was -3 degrees", "-3"),
        ("it was \u22123 degrees", "-3"),
    ],
)
def test_number_stays_one_token(text, number):
    tokens = tokenize(text)
    assert number in tokens
    assert [t for t in tokens if is_number_token(t)] == [number]


def test_number_punctuation_kept_as_written():
    assert tokenize("3,5%") != tokenize("3.5%")
    assert tokenize("1,000") != tokenize("1000")


def test_sentence_final_period_is_not_part_of_number():
    assert tokenize("It is 385. Then 12, 13 and 14.") == ["it", "is", "385", "then", "12", "13", "and", "14"]


def test_digits_glued_to_letters_split_and_hyphen_after_word_is_not_a_sign():
    assert tokenize("384m covid-19") == ["384", "m", "covid", "19"]


@pytest.mark.parametrize(
    ("tok", "expected"),
    [("3.5%", True), ("3,5%", True), ("384.400", True), ("-3", True), ("1000", True), ("a1", False), ("", False),
     ("three", False), ("3.", False), ("%", False)],
)  # fmt: skip
def test_is_number_token(tok, expected):
    assert is_number_token(tok) is expected


# --- tokenize: words and scripts -------------------------------------------------------


def test_words_are_casefolded_and_punctuation_separates():
    assert tokenize("Hello, World! It's (really) OK.") == ["hello", "world", "it's", "really", "ok"]


def test_underscore_is_not_a_word_character():
    assert tokenize("snake_case_name") == ["snake", "case", "name"]


def test_swedish_hyphenated_compound_is_one_token():
    assert tokenize("Skicka e-post till Stockholms-området") == ["skicka", "e-post", "till", "stockholms-området"]
    # A typographic hyphen is stored as ASCII so both spellings match.
    assert tokenize("e\u2010post") == ["e-post"]


def test_swedish_letters_are_word_characters():
    assert tokenize("Älvén går över ån på söndag") == ["älvén", "går", "över", "ån", "på", "söndag"]


def test_cjk_gives_one_token_per_character():
    assert tokenize("東京は日本の首都です") == ["東", "京", "は", "日", "本", "の", "首", "都", "で", "す"]
    assert tokenize("中文ABC") == ["中", "文", "abc"]


def test_thai_splits_into_characters_with_their_marks():
    tokens = tokenize("ภาษาไทยไม่ยาก")
    assert len(tokens) > 1
    assert "ม่" in tokens  # the tone mark stays with its consonant
    assert "".join(tokens) == "ภาษาไทยไม่ยาก"


def test_indic_combining_marks_stay_inside_words():
    assert tokenize("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]


def test_nfd_and_nfc_give_identical_tokens():
    text = "Ångström visited Café Ñandú in Malmö; 3,5 % of ภาษาไทย"
    assert tokenize(unicodedata.normalize("NFD", text)) == tokenize(unicodedata.normalize("NFC", text))
    assert "café" in tokenize(unicodedata.normalize("NFD", text))


def test_typographic_apostrophe_matches_ascii():
    assert tokenize("isn\u2019t") == tokenize("isn't") == ["isn't"]


# --- coverage -----------------------------------------------------------------------


def test_claim_coverage_counts_distinct_claim_tokens():
    # claim tokens {the, river, flows, north}; 3 of 4 occur in the truth
    assert claim_coverage("The river flows north", "The river flowed north through the city") == 0.75


def test_claim_coverage_empty_claim_is_zero():
    assert claim_coverage("", "anything at all") == 0.0
    assert claim_coverage("!!! ...", "anything") == 0.0


def test_claim_coverage_duplicates_do_not_inflate():
    assert claim_coverage("north north north south", "north") == 0.5


# --- negations ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "word", ["not", "never", "nor", "nunca", "jamás", "nadie", "tampoco", "inte", "aldrig", "inga"]
)
def test_listed_negations(word):
    assert word in NEGATIONS
    assert is_negation(word)


@pytest.mark.parametrize("text", ["isn't", "doesn't", "didn't", "wasn't", "can't", "won't", "cannot", "Isn\u2019t"])
def test_contractions_are_negation_not(text):
    (tok,) = tokenize(text)
    assert negation_key(tok) == "not"


def test_negations_are_not_stop_words():
    assert not (NEGATIONS & STOP_WORDS)


# --- claim_is_true -------------------------------------------------------------------


def test_swapped_number_is_not_true():
    assert claim_coverage("The bridge is 384 m", "The bridge is 385 m") == 0.8
    assert not claim_is_true("The bridge is 384 m", ["The bridge is 385 m"])


def test_swapped_percentage_is_not_true():
    assert not claim_is_true("Prices rose 3.5% in May", ["Prices rose 3.6% in May"])
    assert claim_is_true("Prices rose 3.5 % in May", ["Prices rose 3.5% in May"])


def test_inserted_not_is_not_true():
    assert claim_coverage("The bridge is not open", "The bridge is open") == 0.8
    assert not claim_is_true("The bridge is not open", ["The bridge is open"])


def test_inserted_spanish_and_swedish_negations_are_not_true():
    assert not claim_is_true("El puente no está abierto", ["El puente está abierto"])
    assert not claim_is_true("Bron är inte öppen", ["Bron är öppen"])
    assert claim_is_true("Bron är inte öppen", ["Bron är inte öppen i dag"])


def test_contraction_matches_spelled_out_negation():
    assert claim_is_true("The bridge isn't open", ["The bridge is not open"])
    assert claim_is_true("The bridge is not open", ["The bridge isn't open at night"])


def test_paraphrase_with_inflection_drift_is_true():
    assert claim_is_true("The river flows north", ["The river flowed north through the city"])
    assert claim_is_true(
        "The Moon is about 384.400 km from Earth",
        ["Unrelated text.", "The Moon lies about 384.400 km from the Earth"],
    )


def test_coverage_below_threshold_is_not_true():
    # {the, bridge, spans, a, wide, river}: 2 of 6 covered
    assert claim_coverage("The bridge spans a wide river", "The bridge collapsed") < COVERAGE_THRESHOLD
    assert not claim_is_true("The bridge spans a wide river", ["The bridge collapsed"])


def test_guards_apply_to_the_covering_truth_not_any_truth():
    # One truth covers the words, another has the number: neither alone makes it true.
    assert not claim_is_true("The bridge is 384 m long", ["The bridge is 385 m long", "384 apples"])


def test_empty_claim_and_no_truths_are_never_true():
    assert not claim_is_true("", [""])
    assert not claim_is_true("The river flows", [])


def test_claim_is_true_accepts_a_generator():
    assert claim_is_true("The river flows north", (t for t in ["The river flows north fast"]))


def test_best_truth_prefers_a_supporting_truth_then_the_best_coverage():
    truths = ["The bridge is 385 m long", "Completely different"]
    assert best_truth("The bridge is 384 m long", truths) == ("The bridge is 385 m long", 5 / 6)
    assert best_truth("x", []) == (None, 0.0)
    truth, coverage = best_truth("The river flows north", ["The river", "The river flowed north"])
    assert (truth, coverage) == ("The river flowed north", 0.75)


# --- content tokens ------------------------------------------------------------------


def test_content_tokens_drop_function_words_keep_numbers_and_negations():
    assert content_tokens("The bridge is not 384 m long") == ["bridge", "not", "384", "m", "long"]
    assert content_tokens("El puente no está en la ciudad") == ["puente", "no", "ciudad"]
    assert content_tokens("Bron är inte i staden") == ["bron", "inte", "staden"]


# --- evidence_found --------------------------------------------------------------------


def test_evidence_found_ignores_case_and_whitespace():
    spans = ["Project Alpha\nlaunched in\t2021 in Oslo.", "other"]
    assert evidence_found("project alpha launched  in 2021", spans)
    assert not evidence_found("project beta", spans)
    assert not evidence_found("anything", [])


def test_evidence_found_matches_across_normal_forms():
    span = unicodedata.normalize("NFD", "Malmö café")
    assert evidence_found("MALMÖ CAFÉ", [span])


def test_evidence_found_refuses_empty_expected():
    with pytest.raises(ValueError, match="empty after normalisation"):
        evidence_found("  \n ", ["some span"])


# --- properties ------------------------------------------------------------------------

_texts = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(list("aeiouÅåÄäÖöÉé0123456789.,% -'東京ไม่ภาษ\u0301\u0308 ")),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(_texts, _texts)
def test_coverage_is_in_unit_interval(claim, truth):
    assert 0.0 <= claim_coverage(claim, truth) <= 1.0


@settings(max_examples=200, deadline=None)
@given(_texts)
def test_a_claim_with_tokens_is_true_against_itself(claim):
    # Against itself a claim has coverage 1.0 and every number and negation is
    # present, so it is true -- unless it has no tokens: coverage is then 0.0 by
    # definition (no division by zero), which is below the threshold.
    assert claim_is_true(claim, [claim]) is bool(tokenize(claim))


@settings(max_examples=200, deadline=None)
@given(_texts)
def test_tokenize_is_normal_form_independent(text):
    assert tokenize(unicodedata.normalize("NFD", text)) == tokenize(unicodedata.normalize("NFC", text))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=60))
def test_ascii_text_tokenizes_as_the_general_path_does(text):
    # ASCII text takes a shorter path (no NFC, lower() for casefold(), a regex without the
    # scripts and marks ASCII cannot hold); a non-ASCII word after it sends the same text
    # down the general path, where it must give the same tokens.
    assert tokenize(text + " \u00e9t\u00e9") == tokenize(text) + ["\u00e9t\u00e9"]


@settings(max_examples=200, deadline=None)
@given(_texts)
def test_tokens_are_nonempty_and_contain_no_separators(text):
    for tok in tokenize(text):
        assert tok
        assert not any(ch.isspace() or ch == "_" for ch in tok)


def test_the_full_tokenizer_pattern_is_built_at_the_first_text_that_is_not_ascii() -> None:
    """Not at import (its combining-mark class scans 0x20000 code points): an all-ASCII run never builds it."""
    probe = (
        "from pytest_groundeval.core import scoring\n"
        "before = scoring._token_re.cache_info().currsize\n"
        "scoring.tokenize('plain ASCII, 3.5%')\n"
        "ascii_only = scoring._token_re.cache_info().currsize\n"
        "assert scoring.tokenize('Göteborg ไม่') == ['göteborg', 'ไ', 'ม่']\n"
        "print(before, ascii_only, scoring._token_re.cache_info().currsize)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "0", "1"]
