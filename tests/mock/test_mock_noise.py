"""The mock's seeded noise (docs/mock.md, "Noise"): the pure draw, its two changes, and the server through the SDK."""

from __future__ import annotations

import hashlib
import json

import httpx
import pytest
from openai import OpenAI

from pytest_groundeval.core import contract
from pytest_groundeval.mock import (
    AppliedNoise,
    Noise,
    NoiseSettings,
    ThreadedMockProvider,
    decompose,
    generate_answer,
    noise_for,
    noised_answer,
    request_key,
)
from pytest_groundeval.mock.noise import NO_NOISE, apply_noise, parse_attempt
from tests._support.waiting import wait_for

BLOCKS = [
    ("S1", "The Moon is 384.400 km from Earth"),
    ("S2", "Stockholm har 3,5 miljoner invånare. Staden ligger vid Mälaren."),
    ("S3", "This third block is never echoed."),
]
MESSAGES = [
    {"role": "system", "content": "Answer from the evidence only.\n" + "\n".join(f"[{m}] {t}" for m, t in BLOCKS)},
    {"role": "user", "content": "Question: How far is the Moon?"},
]
ANSWER = generate_answer(MESSAGES)


# -- the draw ------------------------------------------------------------------------------------------------------


def test_the_draw_is_sha256_of_seed_attempt_and_key_as_documented():
    key = request_key("How far is the Moon?", BLOCKS)
    assert key == '["How far is the Moon?",[["S1","The Moon is 384.400 km from Earth"],' + (
        '["S2","Stockholm har 3,5 miljoner invånare. Staden ligger vid Mälaren."],["S3","This third block is never echoed."]]]'
    )
    digest = hashlib.sha256(b"groundeval-noise\x007\x002\x00" + key.encode()).digest()
    draw = int.from_bytes(digest[:8], "big") / 2**64
    expected = Noise("drop" if digest[8] % 2 == 0 else "number", int.from_bytes(digest[9:13], "big"))
    assert noise_for(1.0, 7, key, 2) == expected
    assert noise_for(draw + 1e-9, 7, key, 2) == expected  # just above the draw: noised
    assert noise_for(draw, 7, key, 2) is None  # at the draw: not (noised when draw < P)


def test_the_draw_is_pinned_so_no_python_or_platform_can_move_it():
    # Written down once from this implementation: a change of hash, encoding or layout breaks it.
    assert noise_for(1.0, 0, "k", 0) == Noise("number", 3949587075)
    assert noise_for(1.0, 1, "k", 0) == Noise("number", 1138817627)


def test_p0_never_and_p1_always_and_raising_p_only_adds_requests():
    keys = [f"question {i}" for i in range(2000)]
    assert all(noise_for(0.0, 3, k) is None for k in keys)
    assert all(noise_for(1.0, 3, k) is not None for k in keys)
    low = {k for k in keys if noise_for(0.2, 3, k) is not None}
    high = {k for k in keys if noise_for(0.4, 3, k) is not None}
    assert low < high
    # Binomial(2000, 0.2): sd 17.9; the exact counts are fixed by the seed, the band is ±5 sd.
    assert 400 - 90 <= len(low) <= 400 + 90
    assert 800 - 110 <= len(high) <= 800 + 110
    kinds = [noise_for(1.0, 3, k).kind for k in keys]
    assert 1000 - 112 <= kinds.count("drop") <= 1000 + 112


def test_seed_and_attempt_each_change_the_draw_and_repeat_it_exactly():
    keys = [f"q{i}" for i in range(200)]

    def noised(seed: int, attempt: int) -> set[str]:
        return {k for k in keys if noise_for(0.5, seed, k, attempt) is not None}

    assert noised(0, 0) == noised(0, 0)
    assert noised(0, 0) != noised(1, 0)
    assert noised(0, 0) != noised(0, 1)


def test_the_key_is_the_question_and_the_evidence_not_the_rest_of_the_request():
    other_system = [{"role": "system", "content": "Be brief.\n" + MESSAGES[0]["content"]}, MESSAGES[1]]
    assert noised_answer(other_system, ANSWER, NoiseSettings(0.5, 11), 0) == noised_answer(
        MESSAGES, ANSWER, NoiseSettings(0.5, 11), 0
    )
    assert request_key("q", BLOCKS) != request_key("q", BLOCKS[:2]) != request_key("q2", BLOCKS[:2])


@pytest.mark.parametrize(
    "value, expected", [(None, 0), ("0", 0), ("3", 3), (" 12 ", 12)], ids=["absent", "zero", "three", "spaces"]
)
def test_attempt_header_values(value, expected):
    assert parse_attempt(value) == expected


@pytest.mark.parametrize("value", ["-1", "x", "1.5", "", "٣"])
def test_a_bad_attempt_header_is_refused_naming_it(value):
    with pytest.raises(ValueError, match=f"{contract.ATTEMPT_HEADER} must be a whole number >= 0"):
        parse_attempt(value)


@pytest.mark.parametrize("probability", [-0.1, 1.5, float("nan"), float("inf"), "0.5", True])
def test_settings_refuse_a_probability_outside_0_1(probability):
    with pytest.raises(ValueError, match="noise probability must be a number in \\[0, 1\\]"):
        NoiseSettings(probability)


def test_settings_refuse_a_seed_that_is_not_an_int():
    with pytest.raises(ValueError, match="noise seed must be an int"):
        NoiseSettings(0.5, "1")  # type: ignore[arg-type]


# -- the two changes ----------------------------------------------------------------------------------------------


def test_drop_cites_the_dropped_blocks_sentences_to_the_next_block():
    assert ANSWER.count("[S1]") == 1 and ANSWER.count("[S2]") == 2
    first, applied = apply_noise(ANSWER, BLOCKS, Noise("drop", 0))
    assert applied == AppliedNoise("drop", "S1", "S2") and applied.describe() == "drop S1->S2"
    assert first == ANSWER.replace("[S1]", "[S2]")
    second, applied = apply_noise(ANSWER, BLOCKS, Noise("drop", 1))  # pick 1 of the cited [S1, S2]
    assert applied == AppliedNoise("drop", "S2", "S3")
    assert second == ANSWER.replace("[S2]", "[S3]")
    # The last block wraps round to the first.
    wrapped, applied = apply_noise("Stated. [S3]", BLOCKS, Noise("drop", 0))
    assert (wrapped, applied) == ("Stated. [S1]", AppliedNoise("drop", "S3", "S1"))


def test_drop_with_no_other_block_leaves_the_sentences_uncited():
    answer, applied = apply_noise("One. [S1] Two. [S1]", BLOCKS[:1], Noise("drop", 5))
    assert (answer, applied) == ("One. Two.", AppliedNoise("drop", "S1", ""))
    assert applied.describe() == "drop S1->uncited"


def test_number_changes_the_last_digit_by_five_and_never_a_markers_digit():
    answer, applied = apply_noise(ANSWER, BLOCKS, Noise("number", 0))
    assert applied == AppliedNoise("number", "384.400", "384.405")
    assert answer == ANSWER.replace("384.400", "384.405")
    answer, applied = apply_noise(ANSWER, BLOCKS, Noise("number", 1))
    assert applied == AppliedNoise("number", "3,5", "3,0") and "3,0 miljoner" in answer
    # Only two numbers: pick 2 wraps to the first; the 1 and 2 of the markers are not numbers.
    assert apply_noise(ANSWER, BLOCKS, Noise("number", 2))[1] == AppliedNoise("number", "384.400", "384.405")
    assert apply_noise("Born 1989. [S12]", BLOCKS, Noise("number", 1))[1] == AppliedNoise("number", "1989", "1984")


def test_each_change_falls_back_to_the_other_and_nothing_to_change_is_no_noise():
    # No number: a number draw drops a block instead; no citation: a drop draw changes a number.
    assert apply_noise("Plain. [S1]", BLOCKS, Noise("number", 0))[1] == AppliedNoise("drop", "S1", "S2")
    assert apply_noise("In 2021 it opened.", BLOCKS, Noise("drop", 0))[1] == AppliedNoise("number", "2021", "2026")
    assert apply_noise("I could not find evidence to answer.", [], Noise("drop", 0)) == (
        "I could not find evidence to answer.",
        None,
    )


# -- the server ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def noisy():
    """A mock whose every generation is noised (P = 1, seed 0); tests set its ``noise`` back when they change it."""
    with ThreadedMockProvider(noise=NoiseSettings(1.0, 0)) as provider:
        yield provider


@pytest.fixture(scope="module")
def sdk(noisy):
    with OpenAI(base_url=noisy.base_url, api_key="x", max_retries=0) as client:
        yield client


def _sdk_answer(sdk: OpenAI, attempt: int | None = None, stream: bool = False) -> str:
    headers = {} if attempt is None else {contract.ATTEMPT_HEADER: str(attempt)}
    if not stream:
        completion = sdk.chat.completions.create(model="mock-generate", messages=MESSAGES, extra_headers=headers)
        return completion.choices[0].message.content
    chunks = sdk.chat.completions.create(model="mock-generate", messages=MESSAGES, stream=True, extra_headers=headers)
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def test_the_server_answers_the_noised_answer_streamed_or_not_and_logs_it(noisy, sdk):
    noisy.clear_log()
    for attempt in range(4):
        expected, applied = noised_answer(MESSAGES, ANSWER, NoiseSettings(1.0, 0), attempt)
        assert applied is not None and expected != ANSWER
        assert _sdk_answer(sdk, attempt) == expected
        assert _sdk_answer(sdk, attempt, stream=True) == expected
    wait_for(lambda: noisy.requests_total == 8, "the last streamed request to be logged")
    assert [r.noise for r in noisy.log] == [
        noised_answer(MESSAGES, ANSWER, NoiseSettings(1.0, 0), attempt)[1].describe()
        for attempt in range(4)
        for _ in range(2)
    ]


def test_attempts_differ_and_no_header_is_attempt_zero(sdk):
    answers = [_sdk_answer(sdk, attempt) for attempt in range(6)]
    assert len(set(answers)) > 1
    assert _sdk_answer(sdk) == answers[0]


def test_noise_off_answers_byte_for_byte_as_without_noise(noisy):
    body = {"model": "mock-generate", "messages": MESSAGES}
    noised = httpx.post(noisy.base_url + "/chat/completions", json=body).content
    try:
        noisy.noise = NO_NOISE
        plain = httpx.post(noisy.base_url + "/chat/completions", json=body).content
        noisy.noise = NoiseSettings(0.0, 5)
        noisy.clear_log()
        assert httpx.post(noisy.base_url + "/chat/completions", json=body).content == plain
        wait_for(lambda: noisy.requests_total == 1, "the request to be logged")
        assert noisy.log[-1].noise is None
    finally:
        noisy.noise = NoiseSettings(1.0, 0)
    assert json.loads(plain)["choices"][0]["message"]["content"] == ANSWER
    assert noised != plain


def test_only_generations_are_noised(noisy, sdk):
    decomposition = [
        {"role": "system", "content": contract.DECOMPOSITION_PROMPT},
        {"role": "user", "content": ANSWER},
    ]
    noisy.clear_log()
    content = sdk.chat.completions.create(model="m", messages=decomposition).choices[0].message.content
    assert json.loads(content) == {"claims": decompose(ANSWER)}  # the plain answer's claims, unchanged
    wait_for(lambda: noisy.requests_total == 1, "the request to be logged")
    assert noisy.log[-1].kind == "decompose" and noisy.log[-1].noise is None


def test_a_bad_attempt_header_is_a_400_naming_it(noisy):
    response = httpx.post(
        noisy.base_url + "/chat/completions",
        json={"model": "m", "messages": MESSAGES},
        headers={contract.ATTEMPT_HEADER: "first"},
    )
    assert response.status_code == 400
    assert "X-Groundeval-Attempt must be a whole number >= 0, got 'first'" in response.json()["error"]["message"]
