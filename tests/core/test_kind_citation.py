"""Citation accuracy, deterministic checks (docs/citation.md): paragraphs, markers, mention metadata,
source maps, the evidence block, the outcome's wire form, the runner entry point and the
citation-smoke dataset."""

from __future__ import annotations

import json
import re
import shutil
import time
import unicodedata
from pathlib import Path

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groundeval.core.dataset import load_dataset
from pytest_groundeval.core.kinds import citation
from pytest_groundeval.core.kinds.citation import (
    NO_CITATION_DETAIL,
    PARAGRAPH_TEXT_CHARS,
    CitationItem,
    MentionTimeout,
    expected_sources,
    judge_citation,
    mentions,
    normalise_field,
    paragraphs,
    source_details,
    source_map,
)
from pytest_groundeval.core.metrics import compute_metrics
from pytest_groundeval.core.outcome import ItemOutcome
from pytest_groundeval.core.runner import ItemError, ItemRunner
from tests._support.metrics import merged_metrics

REPO = Path(__file__).resolve().parents[2]
CITATION_SMOKE = REPO / "datasets" / "citation-smoke"

SPEAKER_PARTY = re.compile(r"(?P<speaker>[A-Z][a-z]+ [A-Z][a-z]+) \((?P<party>[A-Z]+)\)")
SPEAKER_ONLY = re.compile(r"(?P<speaker>[A-Z][a-z]+ [A-Z][a-z]+) said")

SOURCES = {
    "1": {"speaker": "Anna Berg", "party": "S"},
    "2": {"speaker": "Lars Holm", "party": "M"},
}


def citation_item(**fields) -> CitationItem:
    """A citation item with a placeholder recorded answer unless fields say otherwise."""
    fields.setdefault("response", {"answer": "unused"})
    return CitationItem.model_validate({"id": "cit-test", "kind": "citation", **fields})


def judge(answer: str, sources=SOURCES, regex=SPEAKER_PARTY, mention_timeout_s=None, **item_fields) -> ItemOutcome:
    return judge_citation(
        citation_item(**item_fields),
        answer=answer,
        sources=sources,
        mention_regex=regex,
        mention_timeout_s=mention_timeout_s,
    )


def paragraph_records(outcome: ItemOutcome) -> list[dict]:
    return outcome.extra["citationParagraphs"]


# --- paragraphs ---------------------------------------------------------------------------------


def test_paragraphs_split_on_blank_lines_of_any_kind():
    answer = "Title\r\n\r\nFirst line\nsame paragraph.\n \t\n\n\nSecond.\r\rThird.\n\n"
    assert paragraphs(answer) == ["Title", "First line\nsame paragraph.", "Second.", "Third."]


def test_paragraphs_of_blank_answer():
    assert paragraphs("") == []
    assert paragraphs(" \n\n \n") == []


def test_only_cited_paragraphs_are_judged():
    answer = (
        "## Summary\n\n"
        "Here is what was said.\n\n"
        "Anna Berg (S) wants more fibre [1].\n\n"
        "Meanwhile,\n\n"
        "Lars Holm (M) wants tenders [2][1]."
    )
    outcome = judge(answer)
    assert outcome.passed, outcome.detail
    assert outcome.extra["citationParagraphsJudged"] == 2
    assert outcome.extra["citationParagraphsDropped"] == 3
    assert outcome.extra["citationParagraphsMismatched"] == 0
    records = paragraph_records(outcome)
    assert [r["index"] for r in records] == [2, 4]
    assert records[1]["markers"] == ["2", "1"]
    assert records[0] == {
        "index": 2,
        "text": "Anna Berg (S) wants more fibre [1].",
        "markers": ["1"],
        "metadataMismatch": [],
        "missingMarkers": [],
        "deterministicPass": True,
    }
    assert "2 cited paragraph(s) checked, 3 without a marker dropped" in outcome.detail


def test_repeated_marker_listed_once():
    outcome = judge("Anna Berg (S) spoke [1] and spoke again [1].")
    assert paragraph_records(outcome)[0]["markers"] == ["1"]


# --- unknown markers ----------------------------------------------------------------------------


def test_unknown_marker_is_a_missing_source():
    outcome = judge("Anna Berg (S) wants fibre [1].\n\nLars Holm (M) wants tenders [S9].")
    assert not outcome.passed
    assert outcome.extra["citationParagraphsJudged"] == 2
    assert outcome.extra["citationParagraphsMismatched"] == 1
    first, second = paragraph_records(outcome)
    assert first["deterministicPass"] is True
    assert second["missingMarkers"] == ["S9"]
    assert second["metadataMismatch"] == []  # nothing known was cited, so no metadata to compare
    assert second["deterministicPass"] is False
    # The detail counts paragraphs from 1, as a reader does (docs/byo.md); the records keep the 0-based index.
    assert "paragraph 2: 'Lars Holm (M) wants tenders [S9].'" in outcome.detail and second["index"] == 1
    assert "missingSource: [S9] names no source (known: [1], [2])" in outcome.detail


def test_bracket_styles_are_distinct_markers():
    outcome = judge("Anna Berg (S) wants fibre [S1].")
    assert paragraph_records(outcome)[0]["missingMarkers"] == ["S1"]
    assert judge("Anna Berg (S) wants fibre [S1].", sources={"S1": SOURCES["1"]}).passed


def test_known_and_unknown_marker_still_checks_the_mention():
    outcome = judge("Anna Berg (S) wants fibre [2][7].")
    record = paragraph_records(outcome)[0]
    assert record["missingMarkers"] == ["7"]
    assert record["metadataMismatch"] == [
        "speaker 'Anna Berg', party 'S' (cited [2]) but source [2] has speaker 'Lars Holm', party 'M'"
    ]
    assert outcome.extra["citationParagraphsMismatched"] == 1  # one paragraph, however many findings


# --- mentions -----------------------------------------------------------------------------------


def test_mention_matching_a_cited_source_passes():
    assert judge("Lars Holm (M) wants tenders [2].").passed


def test_mention_of_the_wrong_speaker_is_a_metadata_mismatch():
    outcome = judge("Header\n\nAnna Berg (S) said the market reached most towns [2].")
    assert not outcome.passed
    record = paragraph_records(outcome)[0]
    assert record["metadataMismatch"] == [
        "speaker 'Anna Berg', party 'S' (cited [2]) but source [2] has speaker 'Lars Holm', party 'M'"
    ]
    assert record["missingMarkers"] == []
    assert "metadataMismatch: speaker 'Anna Berg', party 'S' (cited [2]) but source [2] has" in outcome.detail


def test_an_uncited_source_does_not_excuse_a_mention():
    # Source [1] is Anna Berg, but only [2] is cited in the paragraph.
    outcome = judge("Anna Berg (S) wants fibre [2].\n\nLars Holm (M) wants tenders [1].")
    assert outcome.extra["citationParagraphsMismatched"] == 2


def test_mention_agreeing_with_one_of_several_cited_sources_passes():
    assert judge("Anna Berg (S) and others agreed [2][1].").passed


def test_mention_agreeing_with_no_cited_source_names_each():
    sources = {**SOURCES, "3": {"speaker": "Eva Ek", "party": "L"}}
    record = paragraph_records(judge("Anna Berg (S) wants fibre [2][3].", sources=sources))[0]
    assert record["metadataMismatch"] == [
        "speaker 'Anna Berg', party 'S' (cited [2], [3]) but source [2] has speaker 'Lars Holm', party 'M'; "
        "source [3] has speaker 'Eva Ek', party 'L'"
    ]


def test_multiple_groups_only_the_disagreeing_field_is_named():
    record = paragraph_records(judge("Anna Berg (M) wants fibre [1]."))[0]
    assert record["metadataMismatch"] == ["speaker 'Anna Berg', party 'M' (cited [1]) but source [1] has party 'S'"]


def test_each_distinct_failing_mention_recorded_once():
    record = paragraph_records(judge("Anna Berg (M) spoke [1]. Later Anna Berg (M) spoke again. Eva Ek (S) too."))[0]
    assert record["metadataMismatch"] == [
        "speaker 'Anna Berg', party 'M' (cited [1]) but source [1] has party 'S'",
        "speaker 'Eva Ek', party 'S' (cited [1]) but source [1] has speaker 'Anna Berg'",
    ]


def test_source_lacking_a_field_is_not_a_mismatch():
    sources = {"1": {"speaker": "Anna Berg"}}
    assert judge("Anna Berg (Q) wants fibre [1].", sources=sources).passed
    assert judge("Anna Berg (Q) wants fibre [1].", sources={"1": {}}).passed
    assert not judge("Lars Holm (Q) wants fibre [1].", sources=sources).passed


def test_optional_group_that_did_not_match_is_not_compared():
    regex = re.compile(r"(?P<speaker>[A-Z][a-z]+ [A-Z][a-z]+)(?: \((?P<party>[A-Z]+)\))? said")
    assert judge("Anna Berg said so [1].", regex=regex).passed
    assert not judge("Anna Berg (M) said so [1].", regex=regex).passed


def test_pattern_that_can_match_empty_finds_no_empty_mentions():
    regex = re.compile(r"(?P<speaker>[A-Z][a-z]+ [A-Z][a-z]+)?")
    outcome = judge("Anna Berg wants fibre [2].", regex=regex)
    assert paragraph_records(outcome)[0]["metadataMismatch"] == [
        "speaker 'Anna Berg' (cited [2]) but source [2] has speaker 'Lars Holm'"
    ]
    assert judge("nothing capitalised here [2].", regex=regex).passed


def test_without_a_mention_pattern_only_markers_are_checked():
    assert judge("Anna Berg (M) wants fibre [2].", regex=None).passed
    assert not judge("Anna Berg (M) wants fibre [5].", regex=None).passed


def test_comparison_is_nfc_case_and_whitespace_insensitive():
    decomposed = unicodedata.normalize("NFD", "Åsa Öberg")
    assert decomposed != "Åsa Öberg"
    regex = re.compile(r"(?P<speaker>\w[\w\u0300-\u036f]* \w[\w\u0300-\u036f]*) said")
    sources = {"1": {"speaker": "  åsa \t ÖBERG "}}
    assert judge(f"{decomposed} said so [1].", sources=sources, regex=regex).passed
    assert judge("Åsa Öberg said so [1].", sources=sources, regex=regex).passed
    assert not judge("Åsa Berg said so [1].", sources=sources, regex=regex).passed


def test_normalise_field():
    assert normalise_field(" Anna\u00a0\tBERG ") == "anna berg"
    assert normalise_field("A\u030asa") == normalise_field("Åsa") == "åsa"
    assert normalise_field("Straße") == normalise_field("STRASSE")


# --- no citation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["", "Anna Berg (S) wants fibre.", "# Title\n\nNo sources here.\n\n[x] [S] [S-1]"])
def test_answer_without_citations_fails(answer):
    outcome = judge(answer)
    assert outcome.passed is False
    assert outcome.detail == NO_CITATION_DETAIL
    assert outcome.extra["citationParagraphsJudged"] == 0
    assert outcome.extra["citationParagraphsMismatched"] == 0
    assert outcome.extra["citationParagraphs"] == []


def test_no_judged_paragraph_leaves_metadata_accuracy_unmeasured():
    outcome = judge("No citations at all.")
    metrics = compute_metrics([outcome])
    assert metrics.citation_metadata_accuracy is None
    assert metrics.items_by_kind["citation"] == 1
    with_one = compute_metrics([outcome, judge("Anna Berg (M) spoke [1].")])
    assert with_one.citation_metadata_accuracy == 0.0


# --- evidence block -------------------------------------------------------------------------------

EVIDENCE = {
    "minScore": 0.5,
    "claims": [{"id": "c1", "text": "fibre by 2030", "assertiveness": "definitive", "sourceIds": ["s1"]}],
    "sources": [{"id": "s1", "declaredTier": "official"}],
}


def test_evidence_block_reviewed_and_passing():
    outcome = judge("Anna Berg (S) wants fibre by 2030 [1].", evidence=EVIDENCE)
    assert outcome.passed, outcome.detail
    assert outcome.evidence_review is not None
    assert outcome.evidence_review.reviewed is True
    assert outcome.evidence_review.score == 1.0


def test_failing_evidence_block_fails_an_otherwise_clean_item():
    unsourced = {**EVIDENCE, "claims": [{**EVIDENCE["claims"][0], "sourceIds": []}], "sources": []}
    outcome = judge("Anna Berg (S) wants fibre by 2030 [1].", evidence=unsourced)
    assert outcome.extra["citationParagraphsMismatched"] == 0
    assert outcome.passed is False
    assert outcome.evidence_review is not None and outcome.evidence_review.passed is False
    assert outcome.detail.startswith("evidence-risk score 0.000 below minScore 0.500")


def test_answer_not_asserting_the_declared_claim_fails_the_review():
    outcome = judge("Anna Berg (S) wants fibre soon [1].", evidence=EVIDENCE)
    assert outcome.passed is False
    assert "asserted no declared claim" in outcome.detail


def test_no_evidence_block_no_review():
    assert judge("Anna Berg (S) wants fibre [1].").evidence_review is None


# --- wire form ------------------------------------------------------------------------------------


def test_outcome_round_trips_through_json():
    answer = "Intro.\n\nAnna Berg (M) wants fibre by 2030 [1][S4].\n\nLars Holm (M) agrees [2]."
    outcome = judge(answer, evidence=EVIDENCE)
    wire = outcome.to_wire()
    text = json.dumps(wire, allow_nan=False)
    back = ItemOutcome.model_validate(json.loads(text))
    assert back == outcome
    assert wire["kind"] == "citation"
    assert wire["pass"] is False
    assert set(wire["extra"]) == {
        "citationParagraphsJudged",
        "citationParagraphsMismatched",
        "citationParagraphsDropped",
        "citationParagraphs",
    }


def test_long_paragraph_text_is_cut_for_the_report_and_detail():
    long = "Anna Berg (M) " + "word " * 200 + "[1]."
    outcome = judge(long)
    record = paragraph_records(outcome)[0]
    assert len(record["text"]) == PARAGRAPH_TEXT_CHARS
    assert record["text"].endswith("…")
    quoted = next(line for line in outcome.detail.splitlines() if line.startswith("  paragraph 1:"))
    assert len(quoted) < 160


def test_many_failing_paragraphs_are_summarised_in_detail():
    answer = "\n\n".join(f"Anna Berg (M) spoke {i} [1]." for i in range(14))
    outcome = judge(answer)
    assert outcome.extra["citationParagraphsMismatched"] == 14
    assert len(paragraph_records(outcome)) == 14
    assert "… and 4 more (all in extra.citationParagraphs)" in outcome.detail


# --- source_map -----------------------------------------------------------------------------------


def test_source_map_of_a_recorded_response_merges_item_metadata():
    item = citation_item(
        response={
            "answer": "x",
            "sources": [
                {"marker": "1", "metadata": {"speaker": "Recorded Name", "party": "S"}},
                {"marker": "2"},
            ],
        },
        sources=[
            {"marker": "1", "metadata": {"speaker": "Curated Name"}},
            {"marker": "S3", "metadata": {"speaker": "Only Declared"}},
        ],
    )
    assert source_map(item) == {
        "1": {"speaker": "Curated Name", "party": "S"},
        "2": {},
        "S3": {"speaker": "Only Declared"},
    }


def test_source_map_returns_fresh_dicts():
    item = citation_item(sources=[{"marker": "1", "metadata": {"speaker": "A B"}}])
    source_map(item)["1"]["speaker"] = "changed"
    assert item.sources[0].metadata == {"speaker": "A B"}


def test_source_map_of_target_evidence():
    item = CitationItem.model_validate(
        {
            "id": "cit-q",
            "kind": "citation",
            "question": "q",
            "sources": [
                {"marker": "1", "document": "debate/berg.txt", "metadata": {"speaker": "Anna Berg"}},
                {"marker": "S2", "metadata": {"speaker": "Lars Holm"}},
                {"marker": "S3", "document": "debate/other.txt", "metadata": {"speaker": "Eva Ek"}},
                {"marker": "S9", "metadata": {"speaker": "Never Cited"}},
            ],
        }
    )
    evidence = [
        {"marker": "S1", "document": "debate/berg.txt", "start": 0, "end": 5},  # by document
        {"marker": "S2", "document": "debate/holm.txt", "start": 0, "end": 5},  # by marker, no document pinned
        {"marker": "S3", "document": "debate/holm.txt", "start": 9, "end": 20},  # marker pinned elsewhere
        {"marker": "S4", "document": "debate/none.txt", "start": 0, "end": 1},  # nothing declared
    ]
    assert source_map(item, evidence) == {
        "S1": {"speaker": "Anna Berg"},
        "S2": {"speaker": "Lars Holm"},
        "S3": {},
        "S4": {},
    }
    assert source_map(item, []) == {}


def test_source_map_of_a_target_s_own_sources():
    # A mapped target's sources (docs/byo.md) carry their own metadata, which wins on a field the item's
    # entry of the same marker sets too (that entry is an expectation: expectedSource); an entry pinned
    # to a document adds nothing to a source that names none.
    item = citation_item(
        question="q",
        sources=[
            {"marker": "1", "metadata": {"speaker": "Curated Name"}},
            {"marker": "2", "document": "debate/x.txt", "metadata": {"speaker": "Pinned"}},
        ],
    )
    target_sources = [
        {"marker": "1", "text": "t", "metadata": {"speaker": "API Name", "party": "S"}},
        {"marker": "2", "metadata": {"speaker": "Lars Holm"}},
        {"marker": "3"},
    ]
    assert source_map(item, [], target_sources) == {
        "1": {"speaker": "API Name", "party": "S"},
        "2": {"speaker": "Lars Holm"},
        "3": {},
    }
    details = source_details(item, [], {}, target_sources)
    assert details["1"] == {"text": "t", "metadata": {"speaker": "API Name", "party": "S"}}
    # Without a field of its own, the source takes the item's.
    assert source_map(item, [], [{"marker": "1", "metadata": {"party": "S"}}])["1"] == {
        "speaker": "Curated Name",
        "party": "S",
    }
    assert details["3"] == {"text": "", "metadata": {}}


# --- expected sources (target answers) -------------------------------------------------------------

EXPECTS_ANNA = [{"marker": "1", "metadata": {"speaker": "Anna Berg", "party": "S"}}]


def judge_live(answer: str, evidence=(), target_sources=None, sources=EXPECTS_ANNA, regex=SPEAKER_PARTY):
    """Judge a target's answer as the kind does: the source map and the expected sources from its response."""
    item = citation_item(question="q", response=None, sources=sources)
    return judge_citation(
        item,
        answer=answer,
        sources=source_map(item, list(evidence), target_sources),
        mention_regex=regex,
        expected=expected_sources(item, list(evidence), target_sources),
    )


EVIDENCE_1 = [{"marker": "1", "document": "d.txt", "start": 0, "end": 5}]


@pytest.mark.parametrize(
    ("answer", "evidence", "target_sources", "finding"),
    [
        ("Anna Berg (S) wants fibre [1].", EVIDENCE_1, None, None),  # confirmed by the mention
        ("She wants fibre [1].", [], [{"marker": "1", "metadata": {"speaker": "anna  berg", "party": "s"}}], None),
        ("I do not know [1].", EVIDENCE_1, None,
         "expectedSource: [1] (speaker 'Anna Berg', party 'S'): nothing confirms its speaker, party: "
         "no paragraph citing [1] mentions it"),
        ("She wants fibre [1].", [], [{"marker": "1", "metadata": {"speaker": "Anna Berg"}}],
         "nothing confirms its party"),  # the target's metadata confirms the speaker only
        ("Anna Berg (S) wants fibre [1].", [], [{"marker": "1", "metadata": {"speaker": "Lars Holm"}}],
         "expectedSource: [1] (speaker 'Anna Berg', party 'S'): the target's source [1] has speaker 'Lars Holm'"),
        ("Anna Berg (S) wants fibre [2].", [{**EVIDENCE_1[0], "marker": "2"}], None,
         "expectedSource: [1] (speaker 'Anna Berg', party 'S') matches no source the target returned (returned: [2])"),
        ("Anna Berg (S) wants fibre [2].", [*EVIDENCE_1, {**EVIDENCE_1[0], "marker": "2"}], None,
         "the target returned it as [1], but no paragraph cites it"),
    ],
    ids=["mention", "target-metadata", "nothing", "half", "contradicted", "not-returned", "not-cited"],
)  # fmt: skip
def test_an_expected_source_must_be_returned_cited_and_confirmed(answer, evidence, target_sources, finding):
    outcome = judge_live(answer, evidence, target_sources)
    assert outcome.passed is (finding is None), outcome.detail
    if finding is None:
        assert outcome.detail.endswith("1 expected source(s) cited and confirmed")
        return
    assert finding in outcome.detail
    paragraph = outcome.extra["citationParagraphs"][0]
    assert any(finding in text for text in paragraph["metadataMismatch"])  # counted in citationMetadataAccuracy
    assert outcome.extra["citationParagraphsMismatched"] == 1


def test_an_expected_source_is_matched_by_its_document_and_metadata_free_entries_expect_nothing():
    sources = [
        {"marker": "S1", "document": "d.txt", "metadata": {"speaker": "Anna Berg"}},
        {"marker": "S2"},  # no metadata: nothing to confirm
    ]
    answer = "Anna Berg (S) wants fibre [7]."
    assert judge_live(answer, [{**EVIDENCE_1[0], "marker": "7"}], sources=sources).passed
    other_document = [{**EVIDENCE_1[0], "marker": "7", "document": "e.txt"}]
    assert (
        "matches no source the target returned (returned: [7])"
        in judge_live(answer, other_document, sources=sources).detail
    )


def test_without_a_mention_pattern_only_the_targets_own_metadata_can_confirm():
    answer = "She wants fibre [1]."
    assert not judge_live(answer, EVIDENCE_1, regex=None).passed
    reported = [{"marker": "1", "metadata": {"speaker": "Anna Berg", "party": "S"}}]
    assert judge_live(answer, [], reported, regex=None).passed


def test_a_recorded_answer_has_no_expected_sources():
    # The item's sources describe a recorded answer's sources; they are merged, not expected (docs/citation.md).
    outcome = judge_citation(
        citation_item(sources=EXPECTS_ANNA, response={"answer": "I do not know [1]."}),
        answer="I do not know [1].",
        sources=SOURCES,
        mention_regex=SPEAKER_PARTY,
    )
    assert outcome.passed


# --- the runner's entry point ---------------------------------------------------------------------


class ScriptedTarget:
    """An in-process target (docs/target-contract.md option 4) that answers every question with one scripted response."""

    def __init__(self, response: dict) -> None:
        self.response = response
        self.questions: list[tuple[str, str | None]] = []
        self.ingested: list[str] = []

    def info(self) -> dict | None:
        return None

    def ingest(self, document: dict) -> dict:
        self.ingested.append(document["name"])
        return {"documentId": document["name"], "txStart": 1}

    def generate(self, question: str, find: str | None) -> dict:
        self.questions.append((question, find))
        return self.response

    def records(self, step: dict) -> dict:
        raise NotImplementedError("citation items write no records")

    def query(self, body: dict) -> dict:
        raise NotImplementedError("citation items query no records")

    def compare(self, body: dict) -> dict:
        raise NotImplementedError("citation items compare nothing")

    def close(self) -> None:
        pass


def test_runner_judges_a_recorded_response_without_generating():
    dataset = load_dataset(CITATION_SMOKE)
    target = ScriptedTarget({})
    outcome = ItemRunner(target).run(dataset.by_id["cit-smoke-wrong-speaker"], dataset)
    assert target.questions == []
    assert outcome.passed is False
    assert outcome.latency_ms is None
    assert "but source [2] has speaker 'Lars Holm', party 'M'" in outcome.detail


def test_runner_generates_for_a_question_and_judges_with_the_evidence_markers():
    dataset = load_dataset(CITATION_SMOKE)
    item = CitationItem.model_validate(
        {
            "id": "cit-q",
            "kind": "citation",
            "question": "What did Lars Holm say?",
            "find": "DEBATE",
            "sources": [
                {"marker": "S1", "document": "citation-smoke/debate.txt", "metadata": {"speaker": "Lars Holm"}}
            ],
        }
    )
    response = {
        "answer": "Lars Holm (M) wants open tenders [S1].\n\nAnna Berg (S) agreed [S2].",
        "traceId": "trace-7",
        "evidence": [{"marker": "S1", "document": "citation-smoke/debate.txt", "start": 0, "end": 10}],
        "claims": [],
        "usage": {"promptTokens": 11, "completionTokens": 4},
    }
    target = ScriptedTarget(response)
    outcome = ItemRunner(target).run(item, dataset)
    assert target.questions == [("What did Lars Holm say?", "DEBATE")]
    assert outcome.trace_id == "trace-7"
    assert (outcome.prompt_tokens, outcome.completion_tokens) == (11, 4)
    assert outcome.latency_ms is not None and outcome.latency_ms >= 0
    first, second = paragraph_records(outcome)
    assert first["deterministicPass"] is True
    assert second["missingMarkers"] == ["S2"]
    assert outcome.passed is False


# --- bounded mention matching (issue 12, point 9) ---------------------------------------------------

# Catastrophic under both re and regex: every split of the a's into "a" and "aa" is tried.
CATASTROPHIC = r"(?P<speaker>(a|aa)+)b"
# The pattern that hung a session past 180 s under re: (\w+\s?)+ splits a run of word characters 2**n ways.
ISSUE_PATTERN = r"(?P<speaker>(\w+\s?)+)\("


def _copy_citation_smoke(tmp_path: Path, pattern: str, answer: str | None = None) -> Path:
    root = tmp_path / "citation-smoke"
    shutil.copytree(CITATION_SMOKE, root)
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    manifest["mentionPattern"] = pattern
    if answer is not None:
        manifest["items"][0]["response"]["answer"] = answer
    (root / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    return root


def test_a_catastrophic_mention_pattern_is_stopped_naming_pattern_paragraph_and_item():
    answer = "Intro.\n\n" + "a" * 40 + " said so [1]."
    started = time.perf_counter()
    with pytest.raises(MentionTimeout) as info:
        judge(answer, regex=re.compile(CATASTROPHIC), mention_timeout_s=0.05)
    assert time.perf_counter() - started < 5  # unbounded, this is 2**40 steps
    message = str(info.value)
    assert repr(CATASTROPHIC) in message and "paragraph 2 of item 'cit-test'" in message  # counted from 1
    assert (info.value.item_id, info.value.paragraph) == ("cit-test", 1)


def test_mention_patterns_run_with_the_regex_package_and_keep_re_syntax(tmp_path: Path):
    dataset = load_dataset(_copy_citation_smoke(tmp_path, ISSUE_PATTERN))
    compiled = dataset.manifest.mention_regex
    assert isinstance(compiled, regex.Pattern) and compiled.groupindex == {"speaker": 1}
    # Under re this paragraph (48 word characters, no "(") took longer than any CI job waits.
    assert list(mentions("Annabergsvägenochlarsholmsgatanmötsvidtorgetsnart [1]", compiled)) == []
    # The smoke dataset's own pattern, with named groups and \u escapes, matches as under re.
    smoke = load_dataset(CITATION_SMOKE).manifest.mention_regex
    text = "Anna Berg (S) and \u00c5sa Lindqvist (MP) spoke [1]."
    assert list(mentions(text, smoke)) == [m.groupdict() for m in re.finditer(smoke.pattern, text)]


def test_a_recorded_item_whose_pattern_times_out_is_an_error_not_a_hang(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(citation.text, "MENTION_TIMEOUT_S", 0.05)
    root = _copy_citation_smoke(tmp_path, CATASTROPHIC, answer="a" * 40 + " [1]")
    dataset = load_dataset(root)
    with pytest.raises(ItemError) as info:
        ItemRunner(None).run_offline(dataset.items[0], dataset)
    outcome = info.value.outcome
    assert outcome.errored and not outcome.passed and info.value.cause is None  # no target streak
    assert repr(CATASTROPHIC) in outcome.error and "item 'cit-smoke-two-speakers'" in outcome.error
    # The other items of the dataset still judge normally.
    assert ItemRunner(None).run_offline(dataset.by_id["cit-smoke-missing-source"], dataset).error is None


def test_a_target_item_whose_pattern_times_out_is_an_error_and_not_the_targets_fault(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(citation.text, "MENTION_TIMEOUT_S", 0.05)
    dataset = load_dataset(_copy_citation_smoke(tmp_path, CATASTROPHIC))
    item = CitationItem.model_validate({"id": "cit-live", "kind": "citation", "question": "Who?", "find": "DEBATE"})
    response = {
        "answer": "a" * 40 + " [S1].",
        "traceId": None,
        "evidence": [{"marker": "S1", "document": "citation-smoke/debate.txt", "start": 0, "end": 4}],
        "claims": [],
    }
    with pytest.raises(ItemError) as info:
        ItemRunner(ScriptedTarget(response)).run(item, dataset)
    assert info.value.cause is None and "item 'cit-live'" in info.value.outcome.error


def test_a_recorded_item_whose_judging_raises_is_an_errored_outcome(monkeypatch):
    from pytest_groundeval.core.kinds import review

    def broken(block, answer):
        raise RuntimeError("scorer table missing")

    monkeypatch.setattr(review, "review_answer", broken)
    dataset = load_dataset(REPO / "datasets" / "expertqa")
    item = dataset.items[0]
    with pytest.raises(ItemError) as info:
        ItemRunner(None).run_offline(item, dataset)
    assert info.value.outcome.error == (
        f"judging the recorded answer of review item {item.id!r} raised RuntimeError: scorer table missing"
    )


# --- the citation-smoke dataset -------------------------------------------------------------------


def test_citation_smoke_dataset_items_behave_as_documented():
    dataset = load_dataset(CITATION_SMOKE)
    regex = dataset.manifest.mention_regex
    outcomes = {
        item.id: judge_citation(item, answer=item.response.answer, sources=source_map(item), mention_regex=regex)
        for item in dataset.items
    }
    assert {i: o.passed for i, o in outcomes.items()} == {
        "cit-smoke-two-speakers": True,
        "cit-smoke-item-metadata": True,
        "cit-smoke-wrong-speaker": False,
        "cit-smoke-missing-source": False,
    }
    two = outcomes["cit-smoke-two-speakers"]
    assert (two.extra["citationParagraphsJudged"], two.extra["citationParagraphsDropped"]) == (2, 3)
    assert two.evidence_review is not None and two.evidence_review.reviewed
    # The decomposed Å is found as a mention, so the item passes on agreement, not by missing it.
    item = dataset.by_id["cit-smoke-item-metadata"]
    assert [m.group("speaker") for m in regex.finditer(item.response.answer)] == ["A\u030asa Lindqvist"]
    assert paragraph_records(outcomes["cit-smoke-missing-source"])[1]["missingMarkers"] == ["3"]
    assert compute_metrics(outcomes.values()).citation_metadata_accuracy == pytest.approx(5 / 7)


# --- fuzzing --------------------------------------------------------------------------------------

_ANSWER_ALPHABET = st.sampled_from(list("ab AB\n\r\t[]S0123()åÅ\u030a.-") + ["[1]", "[S2]", "\n\n", "Anna Berg (S)"])
_answers = st.one_of(st.text(), st.lists(_ANSWER_ALPHABET, max_size=60).map("".join))
_metadata = st.dictionaries(st.sampled_from(["speaker", "party", "other"]), st.text(max_size=8), max_size=3)
_sources = st.dictionaries(st.sampled_from(["1", "2", "S1", "S2", "10"]), _metadata, max_size=4)


@settings(max_examples=150, deadline=None)
@given(answer=_answers, sources=_sources, regex=st.sampled_from([None, SPEAKER_PARTY, SPEAKER_ONLY]))
def test_arbitrary_answers_never_raise(answer, sources, regex):
    outcome = judge(answer, sources=sources, regex=regex)
    extra = outcome.extra
    judged = extra["citationParagraphsJudged"]
    assert judged + extra["citationParagraphsDropped"] == len(paragraphs(answer))
    assert 0 <= extra["citationParagraphsMismatched"] <= judged == len(extra["citationParagraphs"])
    assert outcome.passed == (judged > 0 and extra["citationParagraphsMismatched"] == 0)
    assert ItemOutcome.model_validate(json.loads(json.dumps(outcome.to_wire()))) == outcome
    compute_metrics([outcome])  # the extra figures are accepted by the aggregator


# --- judge figures (docs/citation.md, "Judge metrics") ---------------------------------------------


def judged_outcome(item_id: str, verdicts: list, expected: list, mismatch: list | None = None) -> ItemOutcome:
    """A citation outcome as ``with_assessment`` leaves it: records with verdicts, labels and counts."""
    mismatch = mismatch or [False] * len(verdicts)
    records = [
        {"index": i, "text": "p [1]", "markers": ["1"], "metadataMismatch": ["x"] if bad else [], "missingMarkers": [],
         "deterministicPass": not bad, "verdict": verdict, "rationale": "r" if verdict else "", "judgeModel": "j",
         "judgeError": None if verdict else "down", "expectedVerdict": label, "coverageScore": 0.5,
         "scorerError": None}
        for i, (verdict, label, bad) in enumerate(zip(verdicts, expected, mismatch))
    ]  # fmt: skip
    base = ItemOutcome(id=item_id, kind="citation", passed=True, detail="ok",
                       extra={"citationParagraphsJudged": len(records),
                              "citationParagraphsMismatched": sum(mismatch), "citationParagraphs": records})  # fmt: skip
    return citation.with_assessment(base, records, judged=True, scored=True)


JUDGED = [
    judged_outcome(
        "a", ["supported", "wrong_speaker", None], ["supported", "wrong_speaker", "partial"], [False, True, False]
    ),
    judged_outcome("b", ["unparseable", "partial", "supported"], ["unsupported", "partial", None]),
    judged_outcome("c", ["wrong_speaker", "unsupported"], ["wrong_speaker", "supported"]),
]


def test_judge_metrics_count_errors_and_unparseable_in_the_denominators():
    metrics = compute_metrics(JUDGED)
    assert metrics.citation_supported_rate == pytest.approx(2 / 8)
    assert metrics.wrong_speaker_rate == pytest.approx(2 / 8)
    assert metrics.unparseable_rate == pytest.approx(1 / 8)
    assert (metrics.judge_errors, metrics.scorer_errors, metrics.coverage_score_mean) == (1, 0, 0.5)
    assert metrics.judge_agreement == pytest.approx(4 / 7)  # the unjudged and the unparseable disagree
    assert metrics.verdict_distribution == {"supported": 2, "partial": 1, "unsupported": 1, "wrong_speaker": 2,
                                            "wrong_attribution": 0, "unparseable": 1, "unjudged": 1}  # fmt: skip
    assert metrics.citation_catches == {"deterministicCatches": 1, "judgeCatches": 4, "judgeOnlyCatches": 3,
                                        "deterministicOnlyCatches": 0, "wrongSpeaker": 2,
                                        "wrongSpeakerDeterministic": 1, "wrongSpeakerJudgeOnly": 1}  # fmt: skip


def test_core_judge_figures_equal_a_hand_count_and_every_partition():
    from pytest_groundeval.core.judging import JUDGE_VERDICTS
    from pytest_groundeval.judge.prompt import JUDGE_SCHEMA

    # The judge is asked for exactly the verdicts the kind counts.
    assert JUDGE_SCHEMA["properties"]["verdict"]["enum"] == list(JUDGE_VERDICTS)
    records = [r for outcome in JUDGED for r in outcome.extra["citationParagraphs"]]
    whole = compute_metrics(JUDGED)
    # By hand over the 7 labelled (expected, judge) pairs: p_o = 4/7; rows s2 ws2 p2 u1, columns s1 ws2 p1 u1
    # unjudged1 unparseable1, so p_e = (2*1 + 2*2 + 2*1 + 1*1) / 49 = 9/49 and kappa = (28/49 - 9/49) / (40/49).
    assert whole.judge_kappa == pytest.approx(19 / 40)
    assert whole.judge_confusion == {
        "supported": {"supported": 1, "unsupported": 1}, "wrong_speaker": {"wrong_speaker": 2},
        "partial": {"partial": 1, "unjudged": 1}, "unsupported": {"unparseable": 1}}  # fmt: skip
    assert whole.verdict_distribution == {"supported": 2, "partial": 1, "unsupported": 1, "wrong_speaker": 2,
                                          "wrong_attribution": 0, "unparseable": 1, "unjudged": 1}  # fmt: skip
    # The records on their own give the run's figures (scripts/measure_judge.py computes them so).
    alone = citation.paragraph_metrics(records, judged=True, scored=True)
    assert (alone["judge_kappa"], alone["judge_confusion"]) == (whole.judge_kappa, whole.judge_confusion)
    assert alone["verdict_distribution"] == whole.verdict_distribution
    for split in ([JUDGED[:1], JUDGED[1:]], [JUDGED[2:], JUDGED[:2]], [[JUDGED[1]], [JUDGED[0]], [JUDGED[2]]]):
        assert merged_metrics(split) == whole  # exact: kappa from integer cells, the same however merged


def test_cohen_kappa_edge_cases():
    assert citation.cohen_kappa({}) is None
    assert citation.cohen_kappa({("supported", "supported"): 3}) == 1.0
    assert citation.cohen_kappa({("supported", "partial"): 3}) == 0.0
    # Perfect disagreement of two balanced labels: p_o 0, p_e 0.5.
    assert citation.cohen_kappa({("supported", "partial"): 1, ("partial", "supported"): 1}) == -1.0


def test_a_record_with_an_unknown_verdict_is_an_error_naming_the_item():
    bad = JUDGED[0].model_copy(deep=True)
    bad.extra["citationParagraphs"][1]["verdict"] = "fine"
    with pytest.raises(ValueError, match=r"item 'a': extra.citationParagraphs\[1\].verdict 'fine' is not one of"):
        compute_metrics([bad])


def test_a_judge_floor_arms_judge_errors_and_no_judge_fails_it():
    from pytest_groundeval.core.gate import evaluate_gate, parse_floors

    def check(metrics, floors, name):
        result = evaluate_gate(metrics, floors=parse_floors(floors), dataset_version="v", models={})
        return next(c for c in result.checks if c.metric == name)

    metrics = compute_metrics(JUDGED)
    armed = check(metrics, {"judgeKappa": 0.0}, "judgeErrors")
    assert (armed.outcome, armed.bound) == ("FAIL", 0.0) and "armed by the judgeKappa bound" in armed.reason
    assert check(metrics, {"judgeKappa": 0.0, "judgeErrors": 1}, "judgeErrors").outcome == "PASS"
    assert all(c.metric != "judgeErrors" for c in evaluate_gate(metrics, dataset_version="v", models={}).checks)
    plain = compute_metrics([JUDGED[0].model_copy(update={"extra": {"citationParagraphsJudged": 1}})])
    silent = check(plain, {"citationSupportedRate": 0.5}, "citationSupportedRate")
    assert silent.outcome == "FAIL" and "no judge was asked" in silent.reason


def test_a_judge_bound_arms_an_unparseable_ceiling_and_all_unparseable_fails_without_one():
    from pytest_groundeval.core.gate import evaluate_gate, parse_floors

    def check(metrics, floors, name="unparseableRate"):
        result = evaluate_gate(metrics, floors=parse_floors(floors), dataset_version="v", models={})
        return next((c for c in result.checks if c.metric == name), None), result.passed

    metrics = compute_metrics(JUDGED)  # unparseableRate 1/8 > 0.05
    armed, passed = check(metrics, {"wrongSpeakerRate": 0.5, "judgeErrors": 1})
    assert (armed.outcome, armed.bound, armed.op) == ("FAIL", 0.05, "<=") and not passed
    assert "0.1250 > 0.0500 (armed by the wrongSpeakerRate bound)" in armed.reason
    # Overridable like the judgeErrors ceiling; no judge bound, no unparseable check.
    overridden, passed = check(metrics, {"wrongSpeakerRate": 0.5, "judgeErrors": 1, "unparseableRate": 0.2})
    assert (overridden.outcome, overridden.bound, passed) == ("PASS", 0.2, True) and "armed" not in overridden.reason
    assert check(metrics, {})[0] is None

    # Every paragraph unparseable: the judge measured nothing; FAIL with or without a judge bound.
    prose = compute_metrics([judged_outcome("p", ["unparseable"] * 3, [None] * 3)])
    useless, passed = check(prose, {"judgeErrors": 0})
    assert (useless.outcome, useless.value, useless.bound, passed) == ("FAIL", 1.0, None, False)
    assert useless.reason == (
        "1.0000: every paragraph sent to the judge came back unparseable: the judge measured nothing (docs/citation.md)"
    )
    armed, passed = check(prose, {"wrongSpeakerRate": 0.5})
    assert (armed.outcome, armed.bound, passed) == ("FAIL", 0.05, False)
    # Only an explicit ceiling of 1 lets such a run through.
    assert check(prose, {"unparseableRate": 1.0})[0].outcome == "PASS"
    assert check(compute_metrics([JUDGED[1]]), {})[0] is None  # 1 of 3 unparseable, no bound: not gated


def test_a_paragraph_labelled_twice_is_named_by_its_index_and_counted_from_1(tmp_path):
    from pytest_groundeval.core.dataset import DatasetError, load_dataset

    labels = [{"index": 1, "expectedVerdict": "supported"}, {"index": 1, "expectedVerdict": "partial"}]
    item = {"id": "c", "kind": "citation", "response": {"answer": "a [1]\n\nb [1]"}, "paragraphLabels": labels}
    (tmp_path / "manifest.json").write_text(json.dumps({"version": "v1", "items": [item]}), encoding="utf-8")
    with pytest.raises(
        DatasetError, match=r"index 1 \(the answer's paragraph 2\) is already labelled by paragraphLabels\[0\]"
    ):
        load_dataset(tmp_path)
