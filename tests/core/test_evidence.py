"""Evidence risk (docs/evidence-risk.md): the tier table, the checks, rewrites, the asserted-claims
filter, aggregation, validation, and the ExpertQA converter's committed output."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from pytest_groundeval.core.dataset import DatasetError, load_dataset
from pytest_groundeval.core.evidence import EvidenceBlock, EvidenceReview, review_answer

REPO = Path(__file__).resolve().parents[2]
EXPERTQA = REPO / "datasets" / "expertqa"
EXPERTQA_SRC = REPO.parent / "shared" / "data" / "expertqa" / "rand_test.first180.jsonl"  # beside the checkout

TIERS = ["guideline", "official", "peer_reviewed", "reputable", "community", "unverified"]

# Written out by hand, not read from the code: changing the code's table must fail here.
EXPECTED_STRENGTH = {
    ("definitive", "guideline"): "pass",
    ("definitive", "official"): "pass",
    ("definitive", "peer_reviewed"): "pass",
    ("definitive", "reputable"): "soften",
    ("definitive", "community"): "flag_for_human_review",
    ("definitive", "unverified"): "flag_for_human_review",
    ("likely", "guideline"): "pass",
    ("likely", "official"): "pass",
    ("likely", "peer_reviewed"): "pass",
    ("likely", "reputable"): "pass",
    ("likely", "community"): "soften",
    ("likely", "unverified"): "flag_for_human_review",
    ("tentative", "guideline"): "pass",
    ("tentative", "official"): "pass",
    ("tentative", "peer_reviewed"): "pass",
    ("tentative", "reputable"): "pass",
    ("tentative", "community"): "pass",
    ("tentative", "unverified"): "soften",
}

CLAIM = "Aspirin reduces the risk of a second heart attack."
URL = "https://forum.example/t/42"


def one_claim_block(assertiveness: str, tiers: list[str], **claim_extra) -> EvidenceBlock:
    """A block with one claim ``c1`` (``CLAIM``) resting on one source per tier given."""
    sources = [{"id": f"s{i}", "url": f"{URL}/{i}", "declaredTier": tier} for i, tier in enumerate(tiers, 1)]
    claim = {
        "id": "c1",
        "text": CLAIM,
        "assertiveness": assertiveness,
        "sourceIds": [s["id"] for s in sources],
        **claim_extra,
    }
    return EvidenceBlock.model_validate({"claims": [claim], "sources": sources})


# --- evidence_strength: the tier table -------------------------------------------------


@pytest.mark.parametrize(("assertiveness", "tier"), sorted(EXPECTED_STRENGTH))
def test_evidence_strength_table_row(assertiveness: str, tier: str) -> None:
    review = review_answer(one_claim_block(assertiveness, [tier]), f"In short: {CLAIM}")
    [finding] = review.findings
    assert finding.check == "evidence_strength"
    assert finding.claim_id == "c1"
    assert finding.verdict == EXPECTED_STRENGTH[(assertiveness, tier)]
    assert assertiveness in finding.reason and tier.replace("_", "-") in finding.reason


def test_docs_table_is_the_code_table() -> None:
    doc = (REPO / "docs" / "evidence-risk.md").read_text(encoding="utf-8")
    header = re.search(r"^\| assertiveness \\ tier \|(.+)\|$", doc, re.MULTILINE)
    assert header, "docs/evidence-risk.md lost its tier table header"
    columns = [c.strip().strip("`") for c in header.group(1).split("|")]
    assert columns == TIERS
    documented = {}
    for assertiveness in ("definitive", "likely", "tentative"):
        row = re.search(rf"^\| `?{assertiveness}`? \|(.+)\|$", doc, re.MULTILINE)
        assert row, f"docs table has no {assertiveness} row"
        cells = [c.strip().strip("`") for c in row.group(1).split("|")]
        documented.update({(assertiveness, t): v for t, v in zip(columns, cells, strict=True)})
    assert documented == EXPECTED_STRENGTH


def test_strongest_source_decides() -> None:
    block = one_claim_block("definitive", ["community", "official", "unverified"])
    [finding] = review_answer(block, CLAIM).findings
    assert finding.verdict == "pass"
    assert "(s2)" in finding.reason


# --- unsourced_claim -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("assertiveness", "verdict", "rewrite"),
    [
        ("definitive", "remove", None),
        ("likely", "flag_for_human_review", None),
        ("tentative", "soften", "It is possible that aspirin reduces the risk of a second heart attack."),
    ],
)
def test_unsourced_claim(assertiveness: str, verdict: str, rewrite: str | None) -> None:
    review = review_answer(one_claim_block(assertiveness, []), CLAIM)
    [finding] = review.findings
    assert (finding.check, finding.verdict, finding.suggested_rewrite) == (
        "unsourced_claim",
        verdict,
        rewrite,
    )
    assert "names no source" in finding.reason


# --- suggested rewrites ----------------------------------------------------------------


def test_soften_rewrite_is_a_hedge_with_lowered_first_letter() -> None:
    [finding] = review_answer(one_claim_block("definitive", ["reputable"]), CLAIM).findings
    assert finding.verdict == "soften"
    assert finding.suggested_rewrite == ("Evidence suggests that aspirin reduces the risk of a second heart attack.")


def test_flag_rewrite_attributes_to_the_source_tier_and_url() -> None:
    [finding] = review_answer(one_claim_block("definitive", ["community"]), CLAIM).findings
    assert finding.verdict == "flag_for_human_review"
    assert finding.suggested_rewrite == (
        f"According to a community source ({URL}/1), aspirin reduces the risk of a second heart attack."
    )


def test_flag_rewrite_names_the_source_id_without_url() -> None:
    block = EvidenceBlock.model_validate(
        {
            "claims": [{"id": "c1", "text": CLAIM, "assertiveness": "likely", "sourceIds": ["blog"]}],
            "sources": [{"id": "blog", "declaredTier": "unverified"}],
        }
    )
    [finding] = review_answer(block, CLAIM).findings
    assert finding.suggested_rewrite == (
        "According to an unverified source (blog), aspirin reduces the risk of a second heart attack."
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NASA landed on the Moon.", "Evidence suggests that NASA landed on the Moon."),
        ("I  think   so.", "Evidence suggests that I think so."),
        ("COVID-19 spreads by air.", "Evidence suggests that COVID-19 spreads by air."),
        ("water boils at 100 C.", "Evidence suggests that water boils at 100 C."),
    ],
)
def test_hedge_keeps_acronyms_and_collapses_whitespace(text: str, expected: str) -> None:
    block = EvidenceBlock.model_validate(
        {
            "claims": [{"id": "c1", "text": text, "assertiveness": "definitive", "sourceIds": ["s"]}],
            "sources": [{"id": "s", "declaredTier": "reputable"}],
        }
    )
    [finding] = review_answer(block, text).findings
    assert finding.suggested_rewrite == expected


def test_pass_and_remove_have_no_rewrite() -> None:
    [passed] = review_answer(one_claim_block("definitive", ["guideline"]), CLAIM).findings
    [removed] = review_answer(one_claim_block("definitive", []), CLAIM).findings
    assert (passed.verdict, passed.suggested_rewrite) == ("pass", None)
    assert (removed.verdict, removed.suggested_rewrite) == ("remove", None)


# --- the asserted-claims filter ---------------------------------------------------------


def test_containment_ignores_case_and_whitespace() -> None:
    answer = "Doctors agree:\n  ASPIRIN reduces\tthe risk   of a second HEART attack. Take care."
    review = review_answer(one_claim_block("definitive", ["guideline"]), answer)
    assert review.asserted_claim_ids == ["c1"]


@pytest.mark.parametrize("answer_form", ["NFC", "NFD"])
@pytest.mark.parametrize("claim_form", ["NFC", "NFD"])
def test_containment_ignores_unicode_normal_form(claim_form: str, answer_form: str) -> None:
    claim = "Le café crème coûte deux euros."
    block = EvidenceBlock.model_validate(
        {"claims": [{"id": "c1", "text": unicodedata.normalize(claim_form, claim), "assertiveness": "tentative"}]}
    )
    answer = unicodedata.normalize(answer_form, "Selon le menu, LE CAFÉ CRÈME coûte deux euros.")
    assert review_answer(block, answer).asserted_claim_ids == ["c1"]


def test_match_phrase_counts_as_asserting() -> None:
    block = one_claim_block("definitive", ["community"], match=["aspirin cuts heart-attack risk"])
    review = review_answer(block, "Aspirin cuts heart-attack risk, they say.")
    assert review.asserted_claim_ids == ["c1"]
    assert review.max_verdict == "flag_for_human_review"


def test_claim_not_made_is_dropped() -> None:
    block = EvidenceBlock.model_validate(
        {
            "claims": [
                {"id": "made", "text": "the sky is blue", "assertiveness": "definitive", "sourceIds": ["s"]},
                {"id": "unmade", "text": "the sea is green", "assertiveness": "definitive"},
            ],
            "sources": [{"id": "s", "declaredTier": "official"}],
        }
    )
    review = review_answer(block, "The sky is blue.")
    assert review.asserted_claim_ids == ["made"]
    assert [f.claim_id for f in review.findings] == ["made"]
    assert review.score == 1.0  # the unsourced "remove" claim was never made


def test_no_declared_claim_asserted_scores_zero() -> None:
    review = review_answer(one_claim_block("tentative", ["guideline"]), "Something else entirely.")
    assert (review.reviewed, review.score, review.risk_score, review.passed) == (True, 0.0, 1.0, False)
    assert review.findings == [] and review.max_verdict is None
    assert "asserted no declared claim" in review.reason


def test_no_claim_asserted_passes_only_a_zero_floor() -> None:
    block = EvidenceBlock.model_validate(
        {"minScore": 0, "claims": [{"id": "c1", "text": CLAIM, "assertiveness": "likely"}]}
    )
    review = review_answer(block, "unrelated")
    assert (review.score, review.passed) == (0.0, True)


# --- aggregation ----------------------------------------------------------------------


def mixed_block(min_score: float = 0.5) -> EvidenceBlock:
    return EvidenceBlock.model_validate(
        {
            "minScore": min_score,
            "claims": [
                {"id": "ok", "text": "alpha", "assertiveness": "likely", "sourceIds": ["rep"]},
                {"id": "soft", "text": "beta", "assertiveness": "definitive", "sourceIds": ["rep"]},
                {"id": "flag", "text": "gamma", "assertiveness": "definitive", "sourceIds": ["forum"]},
                {"id": "gone", "text": "delta", "assertiveness": "definitive"},
            ],
            "sources": [
                {"id": "rep", "declaredTier": "reputable"},
                {"id": "forum", "declaredTier": "community"},
            ],
        }
    )


@pytest.mark.parametrize(
    ("answer", "verdict", "risk"),
    [
        ("alpha", "pass", 0.0),
        ("alpha beta", "soften", 1 / 3),
        ("gamma alpha beta", "flag_for_human_review", 2 / 3),
        ("beta delta gamma alpha", "remove", 1.0),
    ],
)
def test_worst_verdict_wins(answer: str, verdict: str, risk: float) -> None:
    review = review_answer(mixed_block(), answer)
    assert review.reviewed
    assert review.max_verdict == verdict
    assert review.risk_score == risk
    assert review.score == 1.0 - risk
    assert review.passed is (1.0 - risk >= 0.5)
    # findings follow the declared claim order, not the answer's order
    order = ["ok", "soft", "flag", "gone"]
    assert [f.claim_id for f in review.findings] == [c for c in order if c in review.asserted_claim_ids]


def test_min_score_floor_decides_passed() -> None:
    assert review_answer(mixed_block(min_score=0.6), "alpha beta").passed is True  # 2/3 ≥ 0.6
    assert review_answer(mixed_block(min_score=0.7), "alpha beta").passed is False
    assert review_answer(mixed_block(min_score=0.7), "alpha beta").min_score == 0.7


# --- no block, empty block --------------------------------------------------------------


def test_no_block_is_not_reviewed() -> None:
    review = review_answer(None, "anything")
    assert (review.reviewed, review.score, review.risk_score, review.passed) == (False, 1.0, 0.0, True)
    assert "no evidence block" in review.reason


def test_empty_block_is_not_reviewed() -> None:
    review = review_answer(EvidenceBlock.model_validate({"minScore": 0.9}), "anything")
    assert (review.reviewed, review.score, review.passed, review.min_score) == (False, 1.0, True, 0.9)
    assert "declares no claims" in review.reason


# --- validation -----------------------------------------------------------------------


def claim(**over) -> dict:
    return {"id": "c1", "text": CLAIM, "assertiveness": "definitive", "sourceIds": [], **over}


@pytest.mark.parametrize(
    ("block", "loc", "message"),
    [
        (
            {"claims": [claim(sourceIds=["s1", "nope"])], "sources": [{"id": "s1", "declaredTier": "official"}]},
            (),
            "claims[0].sourceIds[1]: claim 'c1' cites unknown source id 'nope'; declared sources: ['s1']",
        ),
        (
            {"sources": [{"id": "s1", "declaredTier": "blog"}]},
            ("sources", 0, "declaredTier"),
            "Input should be 'guideline', 'official', 'peer_reviewed', 'reputable', 'community' or 'unverified'",
        ),
        (
            {"claims": [claim(assertiveness="certain")]},
            ("claims", 0, "assertiveness"),
            "Input should be 'definitive', 'likely' or 'tentative'",
        ),
        ({"minScore": 1.5}, ("minScore",), "minScore must be a number in [0, 1], got 1.5"),
        ({"minScore": -0.1}, ("minScore",), "minScore must be a number in [0, 1], got -0.1"),
        ({"minScore": math.nan}, ("minScore",), "minScore must be a number in [0, 1], got nan"),
        ({"minScore": math.inf}, ("minScore",), "minScore must be a number in [0, 1], got inf"),
        ({"minScore": True}, ("minScore",), "Input should be a valid number"),
        ({"minScore": "0.5"}, ("minScore",), "Input should be a valid number"),
        (
            {"claims": [claim(), claim(text="other")]},
            (),
            "claims[1].id: duplicate claim id 'c1' (first declared at claims[0])",
        ),
        (
            {
                "sources": [
                    {"id": "a", "declaredTier": "official"},
                    {"id": "b", "declaredTier": "official"},
                    {"id": "a", "declaredTier": "community"},
                ]
            },
            (),
            "sources[2].id: duplicate source id 'a' (first declared at sources[0])",
        ),
        ({"claims": [claim(text="  \n")]}, ("claims", 0, "text"), "text must contain at least one non-whitespace"),
        (
            {"claims": [claim(match=["fine", " "])]},
            ("claims", 0, "match"),
            "match[1] is blank; a blank phrase would match every answer",
        ),
        ({"claims": [claim(sourceIDs=[])]}, ("claims", 0, "sourceIDs"), "Extra inputs are not permitted"),
        ({"claims": [claim(id="")]}, ("claims", 0, "id"), "String should have at least 1 character"),
    ],
    ids=[
        "unknown-source",
        "unknown-tier",
        "unknown-assertiveness",
        "min-score-high",
        "min-score-negative",
        "min-score-nan",
        "min-score-inf",
        "min-score-bool",
        "min-score-string",
        "duplicate-claim",
        "duplicate-source",
        "blank-text",
        "blank-match",
        "misspelt-key",
        "empty-id",
    ],
)
def test_malformed_block_is_refused(block: dict, loc: tuple, message: str) -> None:
    with pytest.raises(ValidationError) as excinfo:
        EvidenceBlock.model_validate(block)
    [error] = excinfo.value.errors()
    assert error["loc"] == loc
    assert message in error["msg"]


# --- determinism and wire form ---------------------------------------------------------


def test_review_is_deterministic_and_survives_the_wire() -> None:
    answer = "gamma alpha beta"
    first, second = review_answer(mixed_block(), answer), review_answer(mixed_block(), answer)
    assert first == second
    wire = first.to_wire()
    assert json.dumps(wire, sort_keys=True) == json.dumps(second.to_wire(), sort_keys=True)
    assert {"riskScore", "maxVerdict", "minScore", "assertedClaimIds"} <= wire.keys()
    assert wire["findings"][0].keys() == {"check", "claimId", "verdict", "reason", "suggestedRewrite"}
    assert EvidenceReview.model_validate(json.loads(json.dumps(wire))) == first


# --- invariants -------------------------------------------------------------------------

words = st.sampled_from(["alpha", "beta", "gamma", "delta", "Épée", "straße", "x y"])


@st.composite
def blocks_and_answers(draw) -> tuple[EvidenceBlock, str]:
    source_tiers = draw(st.lists(st.sampled_from(TIERS), max_size=3))
    sources = [{"id": f"s{i}", "declaredTier": t} for i, t in enumerate(source_tiers)]
    claims = [
        {
            "id": f"c{i}",
            "text": text,
            "assertiveness": draw(st.sampled_from(["definitive", "likely", "tentative"])),
            "sourceIds": draw(st.lists(st.sampled_from([s["id"] for s in sources]), unique=True)) if sources else [],
        }
        for i, text in enumerate(draw(st.lists(words, max_size=4)))
    ]
    min_score = draw(st.floats(0.0, 1.0))
    block = EvidenceBlock.model_validate({"minScore": min_score, "claims": claims, "sources": sources})
    answer = " ".join(draw(st.lists(st.one_of(words, st.text(max_size=8)), max_size=5)))
    return block, answer


@given(blocks_and_answers())
def test_score_is_one_minus_risk_in_unit_interval(case: tuple[EvidenceBlock, str]) -> None:
    block, answer = case
    review = review_answer(block, answer)
    assert 0.0 <= review.score <= 1.0
    assert review.score == 1.0 - review.risk_score
    assert review.passed is (review.score >= block.min_score or not review.reviewed)
    assert len(review.findings) == len(review.asserted_claim_ids)


# --- the ExpertQA dataset ------------------------------------------------------------


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_expertqa.py"), "--src", str(EXPERTQA_SRC), *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )


needs_source = pytest.mark.skipif(not EXPERTQA_SRC.is_file(), reason=f"ExpertQA source not present at {EXPERTQA_SRC}")


@needs_source
def test_converter_output_is_byte_identical_to_committed(tmp_path: Path) -> None:
    run_script("--out", str(tmp_path))
    produced = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert produced == [Path("LICENSE"), Path("corpus/questions.txt"), Path("manifest.json")]
    for rel in produced:
        assert (tmp_path / rel).read_bytes() == (EXPERTQA / rel).read_bytes(), f"{rel} differs"


@needs_source
def test_readme_agreement_figures_are_current() -> None:
    figures = run_script("--agreement").stdout
    readme = (EXPERTQA / "README.md").read_text(encoding="utf-8")
    assert figures.strip() in readme


def test_expertqa_manifest_is_well_formed() -> None:
    manifest = json.loads((EXPERTQA / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["version"] == "expertqa-1"
    for name, digest in manifest["corpusHashes"].items():
        assert xxhash.xxh3_64_hexdigest((EXPERTQA / "corpus" / name).read_bytes()) == digest
    assert [c["file"] for c in manifest["corpus"]] == list(manifest["corpusHashes"])
    ids = [item["id"] for item in manifest["items"]]
    assert len(ids) == len(set(ids)) == 180
    verdicts = set()
    for item in manifest["items"]:
        assert re.fullmatch(r"expertqa-\d{3}-[a-z0-9_]+", item["id"])
        assert item["kind"] == "review"
        review = review_answer(EvidenceBlock.model_validate(item["evidence"]), item["response"]["answer"])
        assert review.reviewed, item["id"]
        verdicts.add(review.max_verdict)
    # the real data exercises every verdict, so the dataset can gate in both directions
    assert verdicts == {"pass", "soften", "flag_for_human_review", "remove"}
    assert (EXPERTQA / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


def test_strength_table_is_monotone() -> None:
    from pytest_groundeval.core.evidence import EVIDENCE_STRENGTH, VERDICT_RISK

    levels = ["tentative", "likely", "definitive"]
    for a in levels:
        risks = [VERDICT_RISK[EVIDENCE_STRENGTH[(a, t)]] for t in TIERS]
        assert risks == sorted(risks), f"{a}: a weaker tier got a milder verdict"
    for t in TIERS:
        risks = [VERDICT_RISK[EVIDENCE_STRENGTH[(a, t)]] for a in levels]
        assert risks == sorted(risks), f"{t}: a firmer claim got a milder verdict"


def test_expertqa_loads_with_the_dataset_loader() -> None:
    dataset = load_dataset(EXPERTQA)
    assert len(dataset.items) == 180
    first = dataset.items[0]
    assert (first.id, first.kind) == ("expertqa-000-rr_sphere_gpt4", "review")
    questions = dataset.documents["expertqa/questions.txt"].content.splitlines()
    assert len(questions) == 180
    assert questions[0].startswith("Which psycho-therapeutic approaches would you take")


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (
            {"claims": [{"id": "c1", "text": "x", "assertiveness": "definitive", "sourceIds": ["s9"]}]},
            "item 'rv-1', field items[0].evidence: claims[0].sourceIds[0]: claim 'c1' cites unknown source id 's9'",
        ),
        ({"minScore": 2}, "item 'rv-1', field items[0].evidence.minScore: minScore must be a number in [0, 1]"),
        (
            {
                "claims": [
                    {"id": "c", "text": "x", "assertiveness": "likely"},
                    {"id": "c", "text": "y", "assertiveness": "likely"},
                ]
            },
            "item 'rv-1', field items[0].evidence: claims[1].id: duplicate claim id 'c'",
        ),
    ],
    ids=["unknown-source", "min-score", "duplicate-claim"],
)
def test_malformed_block_in_a_manifest_names_item_and_field(tmp_path: Path, block: dict, expected: str) -> None:
    (tmp_path / "corpus").mkdir()
    manifest = {
        "version": "v1",
        "items": [{"id": "rv-1", "kind": "review", "response": {"answer": "x"}, "evidence": block}],
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(DatasetError) as excinfo:
        load_dataset(tmp_path)
    assert expected in str(excinfo.value)
    assert "manifest.json" in str(excinfo.value)
