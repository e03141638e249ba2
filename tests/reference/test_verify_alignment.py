"""The reference verifier's order-aware support check and its process pool (issue 15).

Each class of one-word swap that a bag-of-words check lets through is tried
on examples written for this file, each with the untouched sentence as a
control that must stay ``supported``. The pool test checks the mechanism
(a small answer's verification finishes while a large one is still running),
not a timing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_groundeval.core.scoring import claim_is_true, tokenize
from pytest_groundeval.reference.app import ReferenceConfig, ServerState, new_verifier, verify_answer, verify_workers
from pytest_groundeval.reference.pool import pool_worker_init
from pytest_groundeval.reference.verify import (
    ClaimCheck,
    EvidenceIndex,
    align_claim,
    same_word,
    verify_claim,
    verify_claims,
)

FERRY = (
    "The harbour opened in 1998. The new ferry carries seven cars and two buses on each crossing. "
    "It sails every forty minutes in summer."
)
REVIEW = "The decision was premature, analysts said. The board approved it in a single meeting."
PUMP = "The village installed a solar-powered pump next to the school. The casing is heat-resistant and light."
CLINIC = "The study counted readmissions of discharged clinic patients within thirty days."


def _verdict(claim: str, span: str) -> str:
    return verify_claim(f"{claim} [S1]", ["S1"], {"S1": span}).verdict


# Each case: (span, the untouched sentence, its one-word swaps). Every swap's words all occur in the span.
CASES = {
    "borrowed": (
        FERRY,
        "The new ferry carries seven cars and two buses on each crossing.",
        [
            "The new ferry carries two cars and two buses on each crossing.",  # a number word from the sentence
            "The new ferry carries forty cars and two buses on each crossing.",  # …from another sentence
            "The new ferry carries seven cars and two buses on each summer.",  # a noun from another sentence
        ],
    ),
    "function_word": (
        REVIEW,
        "The decision was premature, analysts said.",
        [
            "The decision was on, analysts said.",
            "The decision was premature, it said.",
            "The decision was premature, analysts so.",
        ],
    ),
    "compound": (
        PUMP,
        "The village installed a solar-powered pump next to the school.",
        [
            "The village installed a solar-cooled pump next to the school.",
            "The village installed a solar-casing pump next to the school.",
        ],
    ),
    "prefix_longer": (
        CLINIC,
        "The study counted readmissions of discharged clinic patients within thirty days.",
        [
            "The study counted readmissions of clinical clinic patients within thirty days.",
            "The study counted readmissions of discharged clinic patients within thirtyish days.",
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_untouched_sentence_stays_supported(case: str) -> None:
    span, original, _ = CASES[case]
    assert _verdict(original, span) == "supported"


@pytest.mark.parametrize(("case", "swap"), [(case, swap) for case in sorted(CASES) for swap in CASES[case][2]])
def test_a_one_word_swap_is_not_supported(case: str, swap: str) -> None:
    span, original, _ = CASES[case]
    assert swap != original
    check = verify_claim(f"{swap} [S1]", ["S1"], {"S1": span})
    assert check.verdict != "supported", check.reason


def test_a_borrowed_word_is_refused_for_its_place_not_for_being_new() -> None:
    check = verify_claim("The new ferry carries two cars and two buses on each crossing. [S1]", ["S1"], {"S1": FERRY})
    assert check.verdict == "unsupported"
    assert "in order" in check.reason


def test_the_swaps_pass_the_bag_of_words_rules_they_are_meant_to_defeat() -> None:
    # Every swap is "true" by the harness's coverage rule against its span: only the alignment refuses it.
    for span, _, swaps in CASES.values():
        for swap in swaps:
            if swap.startswith("The new ferry carries forty"):
                continue  # "forty" is a number word: the coverage rule has no guard for it, but this one is new
            assert claim_is_true(swap, [span]), swap


@pytest.mark.parametrize(
    ("claim", "span"),
    [
        (
            "After the Stockholm launch, revenue rose 12% in the third quarter.",
            "Revenue rose 12% in the third quarter after the Stockholm launch.",
        ),
        ("The sun is white when viewed from space.", "When viewed from space the sun looks white."),
        ("The nightly build is run by the Göteborg office.", "The Göteborg office runs the nightly build."),
        (
            "Arthur's Magazine was an American literary periodical.",
            "Arthur's Magazine (1844–1846) was an American literary periodical.",
        ),
        ("A ferry carries seven cars.", "The ferry carries seven cars and two buses."),
        (
            "Solar-powered pumps were installed.",
            "The village installed a solar-powered pump. Solar-powered pumps were installed in May.",
        ),
    ],
)
def test_faithful_restatements_stay_supported(claim: str, span: str) -> None:
    check = verify_claim(f"{claim} [S1]", ["S1"], {"S1": span})
    assert check.verdict == "supported", check.reason


# Role swaps (issue 19): the same words with two names exchanged. Whole names of two words or more are the
# hard case: a clause cut in two can align each half somewhere, one half reaching round the other.
ROLE_SWAPS = [
    ("The ferry sails from Upper Harbour to Long Island.", "The ferry sails from Long Island to Upper Harbour."),
    (
        "In summer it rains more in Port Ellis than in Santa Marta.",
        "In summer it rains more in Santa Marta than in Port Ellis.",
    ),
    ("En verano llueve más en Villa Nueva que en San Telmo.", "En verano llueve más en San Telmo que en Villa Nueva."),
    ("The harbour office was built before the North Tower.", "The North Tower was built before the harbour office."),
    ("Lund is larger than Eslöv.", "Eslöv is larger than Lund."),
]


@pytest.mark.parametrize(("sentence", "swap"), ROLE_SWAPS, ids=[s for _, s in ROLE_SWAPS])
def test_a_role_swap_is_not_supported_and_its_sentence_is(sentence: str, swap: str) -> None:
    assert sorted(tokenize(swap)) == sorted(tokenize(sentence))  # the same words
    assert _verdict(sentence, sentence) == "supported"
    check = verify_claim(f"{swap} [S1]", ["S1"], {"S1": sentence})
    assert check.verdict == "unsupported", check.reason
    assert "in order" in check.reason


@pytest.mark.parametrize(
    ("claim", "span"),
    [
        ("El invierno es más frío en Nueva York.", "El invierno en Nueva York es más frío y nieva más."),
        ("Winter is colder in New York.", "Winter in New York is colder and snowier."),
    ],
)
def test_a_phrase_moved_whole_is_still_a_restatement(claim: str, span: str) -> None:
    check = verify_claim(f"{claim} [S1]", ["S1"], {"S1": span})
    assert check.verdict == "supported", check.reason


def test_leaving_out_a_meaning_modifier_is_not_a_restatement() -> None:
    span = "Anna Berg, the former president of the club, opened the season."
    assert _verdict("Anna Berg, the former president of the club, opened the season.", span) == "supported"
    assert _verdict("Anna Berg, the president of the club, opened the season.", span) != "supported"


def test_a_claim_may_not_gather_its_words_from_two_sentences() -> None:
    span = "Margaret Seeger was born on June 17, 1935. Her brother moved to Boston on 30 June."
    assert _verdict("Margaret Seeger was born on June 17, 1935.", span) == "supported"
    assert _verdict("Margaret Seeger was born on June 30, 1935.", span) != "supported"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("solar-powered", "solar-cooled", False),
        ("heat-resistant", "heat-sensitive", False),
        ("e-post", "e-posten", True),
        ("e-mail", "email", True),
        ("seventeen", "seven", False),
        ("fourteen", "four", False),
        ("hundreds", "hundred", True),
        ("clinical", "clinic", True),  # the stem rule still accepts it; the alignment refuses it out of place
    ],
)
def test_same_word_for_compounds_and_number_words(a: str, b: str, same: bool) -> None:
    assert same_word(a, b) is same


def test_one_index_serves_every_claim_of_an_answer() -> None:
    claims = [
        ("The harbour opened in 1998. [S1]", ["S1"]),
        ("The harbour opened in 1999. [S1]", ["S1"]),
        ("Uncited.", []),
    ]
    assert [c.verdict for c in verify_claims(claims, {"S1": FERRY})] == ["supported", "contradicted", "unsupported"]
    index = EvidenceIndex([FERRY])
    assert align_claim("The harbour opened in 1998.", index).ok
    assert not align_claim("The harbour opened in 1998 forty.", index).ok


# ------------------------------------------------------------------ the pool


def _large_answer() -> tuple[list[tuple[str, list[str]]], dict[str, str]]:
    """About 20 KB of distinct sentences, every one cited: 200 claims against one large span.

    Verifying it takes about 0.4 s of CPU, a hundred times the small answer's; verification
    grows with claims times span, so 500 sentences (50 KB) cost about 2 s for no more proof.
    """
    sentences = [
        f"Depot {n} in the northern district stores {n * 7} crates of spare parts for the regional rail line."
        for n in range(200)
    ]
    return [(f"{s} [S1]", ["S1"]) for s in sentences], {"S1": " ".join(sentences)}


async def _finish_order(kind: str) -> list[str]:
    config = ReferenceConfig(
        data_dir=Path("."),
        llm_url="http://127.0.0.1:9/v1",
        embed_url="http://127.0.0.1:9/v1",
        verify_executor=kind,
        verify_workers=2,
    )
    state = ServerState(config, verifier=new_verifier(config))
    try:
        if state.verifier is not None:  # start both workers first (a small answer alone would not start them)
            loop = asyncio.get_running_loop()
            await asyncio.gather(*(loop.run_in_executor(state.verifier, verify_claims, [], {}) for _ in range(2)))
        order: list[str] = []
        large_claims, large_evidence = _large_answer()

        async def run(name: str, claims, evidence) -> None:
            checks = await verify_answer(state, claims, evidence)
            assert all(c.verdict == "supported" for c in checks), [
                c.reason for c in checks if c.verdict != "supported"
            ][:3]
            order.append(name)

        large = asyncio.ensure_future(run("large", large_claims, large_evidence))
        await asyncio.sleep(0)  # the large answer is handed to the pool (or, inline, runs to the end right now)
        await run("small", [("The harbour opened in 1998. [S1]", ["S1"])], {"S1": FERRY})
        await large
        return order
    finally:
        if state.verifier is not None:
            state.verifier.shutdown(wait=True, cancel_futures=True)


def test_a_small_answer_is_verified_while_a_large_one_is_still_running_in_the_pool() -> None:
    assert asyncio.run(_finish_order("process")) == ["small", "large"]


def test_without_the_pool_the_large_answer_blocks_the_small_one() -> None:
    # The same scenario verified on the event loop: this is what the pool is for.
    assert asyncio.run(_finish_order("inline")) == ["large", "small"]


class CountingPool(concurrent.futures.ThreadPoolExecutor):
    """A real (thread) pool that counts the tasks handed to it."""

    def __init__(self) -> None:
        super().__init__(2)
        self.submitted = 0

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def, override]
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


def _pool_state() -> tuple[ServerState, CountingPool]:
    pool = CountingPool()
    config = ReferenceConfig(data_dir=Path("."), llm_url="u", embed_url="u", verify_workers=2)
    return ServerState(config, verifier=pool), pool


SMALL_CLAIMS = [("The harbour opened in 1998. [S1]", ["S1"])]


def test_small_answers_are_verified_on_the_loop_until_that_has_cost_what_starting_the_pool_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A short session (a one-item run) never starts the pool's processes; a long one does, and then uses it.
    expected = verify_claims(SMALL_CLAIMS, {"S1": FERRY})
    state, pool = _pool_state()

    async def session(answers: int) -> list[list[ClaimCheck]]:
        return [await verify_answer(state, SMALL_CLAIMS, {"S1": FERRY}) for _ in range(answers)]

    try:
        assert asyncio.run(session(3)) == [expected] * 3
        assert (pool.submitted, state.warming, state.inline_verify_s > 0) == (0, None, True)
        monkeypatch.setattr("pytest_groundeval.reference.app.INLINE_VERIFY_BUDGET_S", state.inline_verify_s)

        async def spend_the_budget_then_use_the_pool() -> list[list[ClaimCheck]]:
            checks = await session(1)  # over budget: verified here, and the workers are started
            assert state.warming is not None
            await state.warming
            assert pool.submitted == 2  # one warm-up task per worker
            return checks + await session(1)

        assert asyncio.run(spend_the_budget_then_use_the_pool()) == [expected] * 2
        assert pool.submitted == 3
    finally:
        pool.shutdown(wait=True)


def test_a_server_that_verified_only_small_answers_never_made_its_pool() -> None:
    config = ReferenceConfig(data_dir=Path("."), llm_url="u", embed_url="u")
    assert config.verify_executor == "process"
    state = ServerState(config)
    assert asyncio.run(verify_answer(state, SMALL_CLAIMS, {"S1": FERRY})) == verify_claims(SMALL_CLAIMS, {"S1": FERRY})
    assert (state.verifier, state.warming) == (None, None)


def test_a_large_answer_goes_to_the_pool_at_once() -> None:
    large_claims, large_evidence = _large_answer()
    state, pool = _pool_state()
    try:
        checks = asyncio.run(verify_answer(state, large_claims, large_evidence))
        assert [c.verdict for c in checks] == ["supported"] * len(large_claims)
        assert pool.submitted == 3  # two warm-up tasks and the answer
    finally:
        pool.shutdown(wait=True)


def test_the_pool_is_sized_to_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    config = ReferenceConfig(data_dir=Path("."), llm_url="u", embed_url="u")
    assert verify_workers(config) == 6
    assert verify_workers(ReferenceConfig(data_dir=Path("."), llm_url="u", embed_url="u", verify_workers=3)) == 3
    with pytest.raises(ValueError, match="verify_executor"):
        new_verifier(ReferenceConfig(data_dir=Path("."), llm_url="u", embed_url="u", verify_executor="gpu"))


def test_near_miss_manifest_classes_are_the_ones_tested_here() -> None:
    manifest = json.loads(
        (Path(__file__).resolve().parents[2] / "datasets" / "near-miss" / "manifest.json").read_text("utf-8")
    )
    classes = {t for item in manifest["items"] for t in item["tags"]} & set(CASES)
    assert classes == set(CASES)


def _gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def test_pool_workers_end_when_their_server_is_killed_outright() -> None:
    # A stand-in "server" (a real child process) made the pool; SIGKILL it and its workers must go too.
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    context = multiprocessing.get_context("forkserver")
    pool = concurrent.futures.ProcessPoolExecutor(
        1, mp_context=context, initializer=pool_worker_init, initargs=(server.pid,)
    )
    try:
        worker = pool.submit(os.getpid).result(timeout=30)
        assert not _gone(worker, 0.2)  # alive while the server is
        server.kill()
        server.wait()
        assert _gone(worker, 5.0), "the pool worker outlived its server"
    finally:
        server.kill()
        server.wait()
        pool.shutdown(wait=True, cancel_futures=True)
