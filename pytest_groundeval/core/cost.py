"""What a run's tokens cost (docs/gate.md, "Cost"): the prices file and ``judgeCostUsd`` / ``targetCostUsd``.

A prices file (``--eval-prices``) is a JSON object mapping a model name to its prices in
US dollars per million tokens, ``{"input": …, "output": …}``; :func:`read_prices` checks it
and :func:`check_prices` checks what a report or a spool recorded of it.

:func:`price_metrics` adds the costs to a run's metrics from the tokens they already hold:
the judge's per judge model (``judgeTokens``), the target's (``targetTokens``) at the price
of the run's lineage ``generate`` model. A model the prices file does not name is listed
in ``unpricedModels`` and its cost is null, never 0; so is a cost some of whose replies or
calls reported no usage. A ceiling on a null cost FAILs, saying which (``kinds.base.cost_unmeasured``).
The costs are computed from whole token counts summed over the run and exact fractions of
the prices, so a sharded or ``-n 2`` run gives the same figures as a plain one.

Standard library only, besides the metrics it is given; imports nothing of the package.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

from .strict_json import DuplicateKey, no_duplicate_keys

__all__ = ["PRICE_FIELDS", "Prices", "PricesError", "check_prices", "price_metrics", "read_prices"]

PRICE_FIELDS = ("input", "output")
"""The fields of one model's prices: US dollars per 1M input (prompt) and output (completion) tokens."""

TOKENS_PER_PRICE = 1_000_000
"""Prices are per million tokens."""

Prices = dict[str, dict[str, float]]
"""Model name → ``{"input": $/1M tokens, "output": $/1M tokens}``."""

UNKNOWN = "unknown"
"""The lineage's name of a model it does not know (``targets.protocol.UNKNOWN_MODEL``): never priced."""

_M = TypeVar("_M")


class PricesError(ValueError):
    """A prices file (or recorded prices) that cannot be used; the message names the file, the model and the field.

    Attributes:
        model: The model at fault, when one is.
        field: The field at fault (``input``, ``output`` or an unknown one), when one is.
    """

    def __init__(self, message: str, model: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.model = model
        self.field = field


def _shown(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def check_prices(obj: Any, source: str) -> Prices:
    """Validate decoded prices: an object of model name → ``{"input": number >= 0, "output": number >= 0}``.

    Args:
        obj: The decoded JSON value.
        source: Where it came from, for messages (``prices file prices.json``).

    Returns:
        Model → ``{"input": float, "output": float}``, in the order given.

    Raises:
        PricesError: Not an object; a model name that is empty; an entry that is not an
            object; a field missing, unknown, or not a finite number >= 0 (``true`` is not a
            number). The message names ``source``, the model and the field.
    """
    if not isinstance(obj, Mapping):
        raise PricesError(
            f'{source}: expected a JSON object mapping model names to {{"input", "output"}} US dollars per 1M '
            f"tokens, got {_shown(obj)}"
        )
    prices: Prices = {}
    for model, entry in obj.items():
        if not isinstance(model, str) or not model.strip():
            raise PricesError(f"{source}: a model name must be a non-empty string, got {_shown(model)}", model)
        where = f"{source}: model {model!r}"
        if not isinstance(entry, Mapping):
            raise PricesError(f'{where}: expected an object {{"input": …, "output": …}}, got {_shown(entry)}', model)
        for name in entry:
            if name not in PRICE_FIELDS:
                raise PricesError(f"{where}: unknown field {name!r}; the fields are input and output", model, str(name))
        prices[model] = {}
        for name in PRICE_FIELDS:
            if name not in entry:
                raise PricesError(f"{where}: field {name!r} is missing (US dollars per 1M {name} tokens)", model, name)
            value = entry[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise PricesError(
                    f"{where}: field {name!r} is {_shown(value)}: expected a number >= 0 (US dollars per 1M tokens)",
                    model,
                    name,
                )
            prices[model][name] = float(value)
    return prices


def read_prices(path: str | Path) -> Prices:
    """Read and check a prices file (module docstring).

    Raises:
        PricesError: The file cannot be read, is not JSON, names a key twice, or fails
            :func:`check_prices`; the message names the file.
    """
    source = f"prices file {path}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PricesError(f"cannot read {source}: {exc}") from exc
    try:
        obj = json.loads(text, object_pairs_hook=no_duplicate_keys)
    except DuplicateKey as exc:
        raise PricesError(f"{source}: key {exc.key!r} is given twice; JSON would keep only the last", exc.key) from exc
    except json.JSONDecodeError as exc:
        raise PricesError(f"{source} is not valid JSON: {exc}") from exc
    return check_prices(obj, source)


def _usd(prompt: int, completion: int, price: Mapping[str, float]) -> Fraction:
    return (
        Fraction(prompt) * Fraction(price["input"]) + Fraction(completion) * Fraction(price["output"])
    ) / TOKENS_PER_PRICE


def price_metrics(metrics: _M, prices: Mapping[str, Mapping[str, float]] | None, generate_model: str | None) -> _M:
    """``metrics`` with ``judgeCostUsd``, ``targetCostUsd`` and ``unpricedModels`` set from ``prices``.

    Args:
        metrics: A run's ``core.metrics.Metrics`` (its ``judgeTokens`` and ``targetTokens``).
        prices: The checked prices (:func:`check_prices`), or None: the metrics are returned as
            they are (every cost null, ``unpricedModels`` null).
        generate_model: The lineage's generate model, which prices the target's tokens
            (None or ``unknown``: the target's tokens cannot be priced).

    Returns:
        A copy of ``metrics``. A cost is the sum over its models of prompt tokens × input price
        plus completion tokens × output price, per million tokens, computed exactly; null when
        nothing was measured (no judge, no generate call), when a model is missing from
        ``prices`` (named in ``unpricedModels`` with its tokens), or when a reply or call
        reported no usage.
    """
    if prices is None:
        return metrics
    unpriced: dict[str, dict[str, int]] = {}
    judge_cost: float | None = None
    judge = getattr(metrics, "judge_tokens", None)
    if judge is not None:
        missing = {
            model: c["promptTokens"] + c["completionTokens"] for model, c in judge.items() if model not in prices
        }
        if missing:
            unpriced["judge"] = missing
        elif not any(cell["repliesWithoutUsage"] for cell in judge.values()):
            total = sum(
                (_usd(c["promptTokens"], c["completionTokens"], prices[model]) for model, c in sorted(judge.items())),
                Fraction(0),
            )
            judge_cost = float(total)
    target_cost: float | None = None
    target = getattr(metrics, "target_tokens", None)
    if target is not None:
        model = generate_model or UNKNOWN
        if model == UNKNOWN or model not in prices:
            unpriced["target"] = {model: target["promptTokens"] + target["completionTokens"]}
        elif not target["callsWithoutUsage"]:
            target_cost = float(_usd(target["promptTokens"], target["completionTokens"], prices[model]))
    update = {"judge_cost_usd": judge_cost, "target_cost_usd": target_cost, "unpriced_models": unpriced}
    copy: _M = metrics.model_copy(update=update)  # type: ignore[attr-defined]
    return copy
