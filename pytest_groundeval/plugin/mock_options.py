"""The mock provider's noise options, ``--eval-mock-noise`` and ``--eval-mock-seed``, checked (docs/options.md).

Part of ``plugin.options.resolve_settings``, kept in a module of its own so that module stays
under the 800-line rule; standard library and pytest only.
"""

from __future__ import annotations

import math
import re

import pytest

__all__ = ["mock_noise"]


def mock_noise(values: dict, sources: dict) -> dict:
    """``mock_noise`` and ``mock_seed`` of the raw option ``values`` and their ``sources``, as
    ``Settings`` fields (an empty dict without noise), checked (docs/options.md).

    Raises:
        pytest.UsageError: the noise is not a number in [0, 1] or the seed not a whole number;
            a seed without a noise (it would change nothing); noise with ``--eval-url`` (no
            mock generates for a target that is already running).
    """
    noise, seed = values["mock-noise"], values["mock-seed"]
    if seed is not None and noise is None:
        raise pytest.UsageError(
            f"{sources['mock-seed']} given, but no --eval-mock-noise: the seed would change nothing; "
            "give --eval-mock-noise P, or drop it"
        )
    if noise is None:
        return {}
    for running in ("url", "target-map"):
        if values[running]:
            raise pytest.UsageError(
                f"{sources['mock-noise']} makes the mock provider's generations noisy, but the {sources[running]} "
                "target answers with its own provider (no mock generates for it): drop one of them"
            )
    try:
        probability = float(noise)
    except (TypeError, ValueError):
        probability = math.nan
    if not 0 <= probability <= 1:  # NaN fails too
        raise pytest.UsageError(
            f"{noise!r} is not a valid value for {sources['mock-noise']}: expected a probability in [0, 1]"
        )
    number = 0
    if seed is not None:
        text = str(seed).strip()
        if not re.fullmatch(r"[+-]?[0-9]+", text):
            raise pytest.UsageError(
                f"{seed!r} is not a valid value for {sources['mock-seed']}: expected a whole number"
            )
        number = int(text)
    return {"mock_noise": probability, "mock_seed": number}
