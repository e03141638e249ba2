"""Juries (docs/judges.md, "Juries"): the policies, Krippendorff's alpha, the Jury judge and its metrics.

Hand-made verdict sets, no network: each policy on sets where the three part, alpha on
Krippendorff's own worked examples (2011) and its edge cases, a ``Jury`` of fixed judges
(answering, erring, unreadable), and the per-judge metrics a jury's records give, merged
in any split as xdist merges them.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from fractions import Fraction

import pytest

from pytest_groundeval.core.agreement import krippendorff_alpha, nominal_alpha, pattern_alpha, unit_coincidences
from pytest_groundeval.core.judging import JUDGE_VERDICTS, UNPARSEABLE, VERDICT_ORDER, JudgeResult
from pytest_groundeval.core.jury import POLICIES, combine, jury_name, jury_verdict, worst
from pytest_groundeval.core.kinds.citation import Jury, with_assessment
from pytest_groundeval.core.metrics import compute_metrics, format_table
from pytest_groundeval.core.outcome import ItemOutcome
from tests._support.metrics import merged_metrics

S, P, U, WS, WA = "supported", "partial", "unsupported", "wrong_speaker", "wrong_attribution"


def test_the_verdict_order_ranks_every_judge_verdict_once_worst_first():
    assert sorted(VERDICT_ORDER) == sorted(JUDGE_VERDICTS) and len(VERDICT_ORDER) == len(JUDGE_VERDICTS)
    assert VERDICT_ORDER[0] == WS and VERDICT_ORDER[-1] == S
    assert worst([S, P, WA]) == WA and worst([U, WA]) == U and worst([S]) == S


@pytest.mark.parametrize(
    ("verdicts", "majority", "unanimous", "strictest"),
    [
        ([S, S, S], S, S, S),
        ([S, S, P], S, P, P),  # one dissent refuses supported unless the policy is majority
        ([P, P, WS], P, P, WS),  # the dissenters' majority (unanimous) or the worst (strictest)
        ([S, P], P, P, P),  # two judges: a tie goes to the worse, so the three agree
        ([P, U], U, U, U),
        ([S, S, P, P], P, P, P),  # a tie of two pairs: the worse
        ([S, S, U, WA], S, U, U),  # majority supported; unanimous: the dissent ties, the worse
        ([S, P, P, WA, WA], WA, WA, WA),  # tie between partial and wrong_attribution: the worse
        ([S, S, S, U, P, P], S, P, U),
        ([WA], WA, WA, WA),
    ],
)
def test_each_policy_on_hand_made_verdict_sets(verdicts, majority, unanimous, strictest):
    assert jury_verdict(verdicts, "majority") == majority
    assert jury_verdict(verdicts, "unanimous") == unanimous
    assert jury_verdict(verdicts, "strictest") == strictest
    assert jury_verdict(list(reversed(verdicts)), "majority") == majority  # order does not matter
    assert POLICIES == ("majority", "unanimous", "strictest")


def test_a_policy_refuses_no_verdict_a_non_verdict_and_an_unknown_policy():
    with pytest.raises(ValueError, match="at least one"):
        jury_verdict([], "majority")
    with pytest.raises(ValueError, match="'unparseable' is not a judge verdict"):
        jury_verdict([S, UNPARSEABLE], "majority")
    with pytest.raises(ValueError, match="'loudest' is not a jury policy"):
        jury_verdict([S], "loudest")


def result(model: str, verdict: str | None, *, error: str | None = None, attempts: int = 1) -> JudgeResult:
    return JudgeResult(verdict=verdict, rationale="why" if verdict else "", model=model, attempts=attempts, error=error)


def test_combine_takes_the_policy_over_the_judges_that_answered():
    name = jury_name(["a", "b", "c"], "majority")
    assert name == "jury(majority: a, b, c)"
    out = combine([result("a", S), result("b", None, error="down"), result("c", P, attempts=3)], "majority", name)
    # Two answered (a tie: the worse); the unjudged judge has no vote and is kept on its own record.
    assert (out.verdict, out.model, out.attempts, out.error) == (P, name, 5, None)
    assert out.rationale == "majority of 2 of 3 judge(s) -> partial (a: supported; b: unjudged; c: partial)"
    assert [j.model for j in out.judges] == ["a", "b", "c"] and out.judges[1].error == "down"
    record = out.to_record()
    assert [j["verdict"] for j in record["judges"]] == [S, None, P] and "judges" not in record["judges"][0]
    # No verdict from any judge: unparseable when one replied unreadably, else a judge error naming each.
    unread = combine([result("a", UNPARSEABLE), result("b", None, error="down")], "strictest", "j")
    assert (unread.verdict, unread.error) == (UNPARSEABLE, None) and "b: unjudged" in unread.rationale
    down = combine([result("a", None, error="timeout"), result("b", None, error="429")], "majority", "j")
    assert down.verdict is None and down.error == "no judge of the jury answered: a: timeout; b: 429"
    # One judge's result has no ``judges``: its record is what it always was.
    assert "judges" not in result("a", S).to_record()


class FixedJudge:
    """A judge that needs no network: the same verdict (or error) for every paragraph."""

    gave_up = None

    def __init__(self, model: str, verdict: str | None, error: str | None = None) -> None:
        self.model, self.verdict, self.error = model, verdict, error
        self.asked = 0
        self.closed = False

    async def judge(self, payload):
        self.asked += 1
        return JudgeResult(verdict=self.verdict, rationale="fixed" if self.verdict else "", error=self.error)

    def pop_notices(self) -> list[str]:
        return [f"{self.model} noticed"] if self.asked == 1 else []

    async def close(self) -> None:
        self.closed = True


def test_a_jury_asks_every_judge_and_keeps_each_result():
    judges = [FixedJudge("a", S), FixedJudge("b", P), FixedJudge("c", "fine")]
    jury = Jury(judges, "unanimous")
    out = asyncio.run(jury.judge({"paragraph": "x", "citedSources": [], "otherSources": [], "metadataMismatch": []}))
    assert [j.asked for j in judges] == [1, 1, 1]
    # A judge's unusable answer is checked as one judge's is (a judge error), never a vote.
    assert out.verdict == P and out.judges[2].verdict is None and "returned verdict 'fine'" in out.judges[2].error
    assert [j.model for j in out.judges] == ["a", "b", "c"]  # a result without a model names its judge
    assert jury.model == "jury(unanimous: a, b, c)" and jury.gave_up is None
    assert jury.pop_notices() == ["a noticed", "b noticed", "c noticed"]
    asyncio.run(jury.close())
    assert all(j.closed for j in judges)


def test_a_jury_gives_up_only_when_every_judge_has():
    a, b = FixedJudge("a", S), FixedJudge("b", S)
    jury = Jury([a, b])
    a.gave_up = "a is gone"
    assert jury.gave_up is None
    b.gave_up = "b is gone"
    assert jury.gave_up == "every judge of the jury gave up: a is gone; b is gone"


@pytest.mark.parametrize(
    ("members", "policy", "message"),
    [
        (["a"], "majority", "two judges or more, got 1"),
        (["a", "a"], "majority", "judge model 'a' is in the jury twice"),
        (["a", "b"], "loudest", "'loudest' is not a jury policy"),
    ],
)
def test_a_jury_refuses_one_judge_a_model_twice_and_an_unknown_policy(members, policy, message):
    with pytest.raises(ValueError, match=message):
        Jury([FixedJudge(m, S) for m in members], policy)


# -- Krippendorff's alpha ---------------------------------------------------------------------------


def test_alpha_of_krippendorffs_binary_example():
    # Krippendorff (2011), "A. Binary data, two observers, no missing data": alpha = 0.095.
    first = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    second = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    units = [[str(x), str(y)] for x, y in zip(first, second)]
    # By hand: n = 20 values, 14 zeros and 6 ones; 4 units disagree, o[0,1] = 4;
    # alpha = 1 - (n - 1) * o[0,1] / (n_0 * n_1) = 1 - 19 * 4 / (14 * 6) = 8 / 84.
    assert nominal_alpha(units) == pytest.approx(8 / 84) and round(nominal_alpha(units), 3) == 0.095


def test_alpha_of_krippendorffs_nominal_example_with_four_observers_and_missing_values():
    # Krippendorff (2011), "C. Nominal data, any number of observers, missing data": 4 observers, 12 units,
    # values 1-5, some missing (None); unit 12 has one value and is not pairable. alpha = 0.743.
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    units = [[str(row[u]) for row in data if row[u] is not None] for u in range(12)]
    # By hand, the coincidence matrix: the diagonal holds o11 = 3 + 2 + 2 (units 1, 8, 11), o22 = 2 + 4 + 4
    # (units 2, 5, 9), o33 = 4 + 4, o44 = 4, o55 = 3; so n_c = 9, 13, 10, 5, 3 (n = 40 pairable values) and
    # the cells off the diagonal sum to 40 - 32 = 8. sum_{c!=k} n_c n_k = 40^2 - (81 + 169 + 100 + 25 + 9) = 1216:
    # alpha = 1 - (n - 1) * 8 / 1216 = 1 - 39 * 8 / 1216.
    cells = Counter()
    for unit in units:
        cells.update(unit_coincidences(unit))
    totals = {c: sum(w for (a, _), w in cells.items() if a == c) for c in "12345"}
    assert totals == {"1": 9, "2": 13, "3": 10, "4": 5, "5": 3}
    assert sum(w for (c, k), w in cells.items() if c != k) == 8
    assert cells[("1", "2")] == Fraction(4, 3)  # unit 6 (a third: four values, all different) and unit 8 (one)
    assert nominal_alpha(units) == pytest.approx(1 - 39 * 8 / 1216)
    assert round(nominal_alpha(units), 3) == 0.743


def test_alpha_edge_cases():
    assert nominal_alpha([[S, S], [P, P], [U, U, U]]) == 1.0  # perfect agreement
    assert nominal_alpha([[S, S], [S, S, S]]) is None  # one category only: undefined, never 1 or 0
    assert nominal_alpha([[S], [P]]) is None  # nothing pairable
    assert nominal_alpha([]) is None and krippendorff_alpha({}) is None
    # Systematic disagreement is below 0 (two units, each (a, b): 1 - 3 * 4 / 8 = -0.5).
    assert nominal_alpha([[S, P], [S, P]]) == -0.5
    assert unit_coincidences([S]) == {} and unit_coincidences([S, P, P]) == {
        (S, P): 1, (P, S): 1, (P, P): 1}  # fmt: skip


def test_alpha_of_units_counted_by_pattern_is_alpha_of_the_units_one_by_one():
    # The units of Krippendorff's four-observer example, in any order: a pattern is a unit's sorted values.
    units = [["1", "1", "1"], ["2", "2", "3", "2"], ["3", "3"], ["1", "2", "3", "4"], ["2", "2", "1"], ["3", "3"]]
    patterns = Counter(tuple(sorted(unit)) for unit in units)
    assert patterns[("3", "3")] == 2
    cache: dict = {}
    assert pattern_alpha(patterns, cache) == nominal_alpha(units)
    assert set(cache) == set(patterns)  # each pattern's cells computed once
    assert pattern_alpha(patterns, cache) == nominal_alpha(units)  # and read back from the cache
    # A pattern counted 0 times (a bootstrap replicate that drew none of it) and a lone value add nothing.
    assert pattern_alpha({**patterns, ("4", "5"): 0, ("5",): 3}) == nominal_alpha(units)
    assert pattern_alpha({}) is None


# -- a jury's records in the metrics --------------------------------------------------------------


def jury_outcome(item_id: str, rows: list[tuple[list[str | None], str | None]], policy: str = "majority"):
    """An outcome whose paragraphs a jury of judges a, b (and c, …) judged: rows of (verdicts, human label)."""
    records = []
    for i, (verdicts, label) in enumerate(rows):
        models = "abcdefg"[: len(verdicts)]
        members = [result(m, v, error=None if v else "down") for m, v in zip(models, verdicts)]
        judged = combine(members, policy, jury_name(list(models), policy))
        records.append({"index": i, "text": "p", "markers": ["1"], "metadataMismatch": [], "missingMarkers": [],
                        "deterministicPass": True, **judged.to_record(), "expectedVerdict": label,
                        "coverageScore": None, "coverageLogit": None, "coverageTruncated": False,
                        "scorerError": None})  # fmt: skip
    base = ItemOutcome(id=item_id, kind="citation", passed=True, detail="ok",
                       extra={"citationParagraphsJudged": len(records), "citationParagraphsMismatched": 0})  # fmt: skip
    return with_assessment(base, records, judged=True, scored=False)


JURY = [
    jury_outcome("x", [([S, P], S), ([WS, WS], WS), ([WA, WA], WA)]),
    jury_outcome("y", [([P, U], P), ([U, U], S), ([S, None], S)]),
    jury_outcome("z", [([UNPARSEABLE, S], None), ([None, None], P)]),
]


def test_a_jurys_records_give_alpha_and_per_judge_figures_beside_the_jurys():
    m = compute_metrics(JURY)
    # The jury's verdicts (majority, ties to the worse): x P WS WA, y U U S, z S unjudged.
    assert m.verdict_distribution == {S: 2, P: 1, U: 2, WS: 1, WA: 1, UNPARSEABLE: 0, "unjudged": 1}
    assert m.judge_errors == 1  # no judge answered z's second paragraph
    # Judge a: S WS WA | P U S | unparseable unjudged; judge b: P WS WA | U U unjudged | S unjudged.
    assert m.verdict_distribution_by_model == {
        "a": {S: 2, P: 1, U: 1, WS: 1, WA: 1, UNPARSEABLE: 1, "unjudged": 1},
        "b": {S: 1, P: 1, U: 2, WS: 1, WA: 1, UNPARSEABLE: 0, "unjudged": 2},
    }
    # 7 labelled paragraphs (z's first has none). a agrees on x's three, y0 and y2 (5/7); b on WS and WA
    # (2/7): its errors stay in the denominator as disagreements. The jury: WS, WA and y2 (3/7).
    assert m.judge_agreement_by_model == {"a": pytest.approx(5 / 7), "b": pytest.approx(2 / 7)}
    assert m.judge_agreement == pytest.approx(3 / 7)
    # kappa by hand: a's rows S3 WS1 WA1 P2, columns S2 WS1 WA1 P1 U1 unjudged1, p_e = 10/49, p_o = 35/49;
    # b's columns P1 WS1 WA1 U2 unjudged2, p_e = 4/49, p_o = 14/49.
    assert m.judge_kappa_by_model == {"a": pytest.approx(25 / 39), "b": pytest.approx(10 / 45)}
    # alpha over the 5 paragraphs with two verdicts: (S,P) (WS,WS) (WA,WA) (P,U) (U,U); by hand
    # n = 10, off-diagonal cells 4, sum_{c!=k} n_c n_k = 100 - (1 + 4 + 4 + 4 + 9) = 78.
    assert m.judge_alpha == pytest.approx(1 - 9 * 4 / 78) == pytest.approx(7 / 13)


def test_the_per_judge_figures_are_the_same_however_the_outcomes_are_split():
    whole = compute_metrics(JURY)
    for split in ([JURY[:1], JURY[1:]], [JURY[2:], JURY[:2]], [[JURY[1]], [JURY[2]], [JURY[0]]]):
        assert merged_metrics(split) == whole  # exact: alpha from fraction cells, kappa from integer cells


def _judged_outcome(judged: JudgeResult) -> ItemOutcome:
    record = {"index": 0, "text": "p", "markers": ["1"], "metadataMismatch": [], "missingMarkers": [],
              "deterministicPass": True, **judged.to_record(), "expectedVerdict": None}  # fmt: skip
    base = ItemOutcome(id="t", kind="citation", passed=True, detail="ok",
                       extra={"citationParagraphsJudged": 1, "citationParagraphsMismatched": 0})  # fmt: skip
    return with_assessment(base, [record], judged=True, scored=False)


def test_a_jurys_tokens_are_its_judges_summed_and_counted_per_judge_model():
    a = JudgeResult(verdict=S, rationale="r", model="a", replies=2, replies_without_usage=1, prompt_tokens=100,
                    completion_tokens=10)  # fmt: skip
    b = JudgeResult(verdict=P, rationale="r", model="b", replies=1, prompt_tokens=50, completion_tokens=5)
    c = JudgeResult(verdict=P, rationale="r", model="c")  # a judge that reports no usage at all
    out = combine([a, b, c], "majority", jury_name(["a", "b", "c"]))
    # The jury's record holds the sum (c: one reply without usage, its tokens unknown, never 0 counted as known).
    assert (out.prompt_tokens, out.completion_tokens, out.replies, out.replies_without_usage) == (150, 15, 4, 2)
    tokens = compute_metrics([_judged_outcome(out)]).judge_tokens
    # judgeTokens names each judge's model (what a prices file prices), never the jury's name.
    assert tokens == {
        "a": {"promptTokens": 100, "completionTokens": 10, "replies": 2, "repliesWithoutUsage": 1},
        "b": {"promptTokens": 50, "completionTokens": 5, "replies": 1, "repliesWithoutUsage": 0},
        "c": {"promptTokens": 0, "completionTokens": 0, "replies": 1, "repliesWithoutUsage": 1},
    }
    bad = _judged_outcome(out)
    bad.extra["citationParagraphs"][0]["judges"][1]["judgePromptTokens"] = -1
    with pytest.raises(ValueError, match=r"asked record 0\)\.judges\[1\]: judgePromptTokens must be"):
        compute_metrics([bad])


def test_one_judge_adds_no_jury_figure():
    one = JURY[0].model_copy(deep=True)
    for record in one.extra["citationParagraphs"]:
        del record["judges"]
    m = compute_metrics([one])
    assert (m.judge_alpha, m.judge_kappa_by_model, m.judge_agreement_by_model) == (None, None, None)
    assert m.verdict_distribution_by_model is None and m.verdict_distribution is not None


def test_a_table_of_figures_is_checked_and_printed_per_judge():
    from pytest_groundeval.core.metrics import Metrics

    assert format_table({"a": 0.75, "b": None, "c": 0.0}) == "a 0.7500, b n/a, c 0.0000"
    with pytest.raises(ValueError, match=r"b: expected a number in \[-1, 1\] or null"):
        Metrics.model_validate({"judgeKappaByModel": {"a": 0.5, "b": 1.5}})
    with pytest.raises(ValueError, match=r"a: expected a number in \[0, 1\] or null"):
        Metrics.model_validate({"judgeAgreementByModel": {"a": -0.5}})


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.update(judges="a"), r"\.judges must be a list"),
        (lambda r: r["judges"][0].pop("judgeModel"), r"\.judges\[0\] must be an object with a judgeModel"),
        (lambda r: r["judges"][1].update(judgeModel="a"), r"\.judges\[1\]\.judgeModel 'a' is there twice"),
        (lambda r: r["judges"][0].update(verdict="fine"), r"\.judges\[0\]\.verdict 'fine' is not one of"),
    ],
)
def test_a_bad_jury_record_is_an_error_naming_the_item_and_record(mutate, message):
    bad = JURY[0].model_copy(deep=True)
    mutate(bad.extra["citationParagraphs"][1])
    with pytest.raises(ValueError, match=r"item 'x': extra\.citationParagraphs\[1\]" + message):
        compute_metrics([bad])


def test_a_judge_alpha_floor_without_a_jury_fails_saying_why():
    from pytest_groundeval.core.gate import evaluate_gate, parse_floors

    def check(metrics):
        result = evaluate_gate(metrics, floors=parse_floors({"judgeAlpha": 0.5}), dataset_version="v", models={})
        return next(c for c in result.checks if c.metric == "judgeAlpha")

    one = JURY[0].model_copy(deep=True)
    for record in one.extra["citationParagraphs"]:
        del record["judges"]
    silent = check(compute_metrics([one]))
    assert silent.outcome == "FAIL" and "no jury judged them" in silent.reason
    agreed = check(compute_metrics([jury_outcome("s", [([S, S], S), ([S, S], S)])]))
    assert agreed.outcome == "FAIL" and "judgeAlpha is undefined" in agreed.reason
    measured = check(compute_metrics(JURY))
    assert (measured.outcome, measured.value) == ("PASS", pytest.approx(7 / 13))
    # A bound on judgeAlpha arms judgeErrors <= 0, as the other judge bounds do.
    armed = evaluate_gate(compute_metrics(JURY), floors=parse_floors({"judgeAlpha": 0.5}), dataset_version="v",
                          models={})  # fmt: skip
    errors = next(c for c in armed.checks if c.metric == "judgeErrors")
    assert errors.outcome == "FAIL" and "armed by the judgeAlpha bound" in errors.reason
