"""A jury's judges file (``--eval-judges FILE``, ``groundeval rejudge --judges FILE``; docs/judges.md, "Juries").

The file is a JSON list with one object per judge::

    [
      {"url": "https://api.openai.com/v1", "model": "gpt-4.1-mini", "apiKeyEnv": "OPENAI_API_KEY"},
      {"url": "http://127.0.0.1:8000/v1", "model": "Qwen/Qwen3-8B"}
    ]

``url`` is the judge's OpenAI-compatible base URL, ``model`` its model (distinct across the
jury: the per-judge figures are keyed by it), and ``apiKeyEnv``, optional, *names* the
environment variable holding that judge's key: the file holds no key, so it can be
committed, and a key never reaches a command line, a log or the report. A judge without
``apiKeyEnv`` is sent no key (a local server). Every problem is a :class:`JudgesFileError`
naming the file, the entry's index and the field, never a key's value.

Standard library only: the plugin's options read the file at start-up.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = ["FIELDS", "JudgeSpec", "JudgesFileError", "check_judge_url", "load_judges"]

FIELDS = ("url", "model", "apiKeyEnv")
"""The fields of one judge's entry."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class JudgesFileError(ValueError):
    """A judges file that cannot be used; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class JudgeSpec:
    """One judge of a jury: where it is, its model, and its key (never printed)."""

    url: str
    """Its OpenAI-compatible base URL (no trailing ``/``), or ``mock`` for the session's mock provider."""
    model: str
    """Its model, distinct across the jury."""
    api_key_env: str | None = None
    """The environment variable its key was read from, or None (no key sent)."""
    api_key: str | None = field(default=None, repr=False, compare=False)
    """Its key: handed to its judge client only, never printed or stored."""


def check_judge_url(value: Any) -> str | None:
    """Why ``value`` is not a judge URL (an http(s) URL with a host and no credentials), or None when it is.

    The reason never repeats the URL's credentials.
    """
    if not isinstance(value, str) or not value.strip():
        return "expected an http(s) base URL such as https://api.openai.com/v1"
    parts = urlsplit(value.strip())
    if parts.username is not None or parts.password is not None:
        return "the URL carries credentials: they would be printed and stored; name the key's variable in apiKeyEnv"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{value.strip()!r} is not an http(s) URL with a host"
    return None


def _shown(value: Any) -> str:
    return type(value).__name__ if not isinstance(value, (str, int, float, bool)) or value is None else repr(value)


def _entry(name: str, i: int, entry: Any, environ: Mapping[str, str]) -> JudgeSpec:
    where = f"{name}: judges[{i}]"
    if not isinstance(entry, Mapping):
        raise JudgesFileError(
            f'{where}: expected an object {{"url", "model", "apiKeyEnv"}}, got {type(entry).__name__}'
        )
    for key in entry:
        if key not in FIELDS:
            # The value is never shown: a key pasted into the file under another name must not be echoed.
            raise JudgesFileError(
                f"{where}.{key}: unknown field; a judge has {', '.join(FIELDS)} (a key is named by its environment "
                "variable in apiKeyEnv, never written in the file)"
            )
    for key in ("url", "model"):
        if key not in entry:
            raise JudgesFileError(f"{where}.{key}: missing")
    problem = check_judge_url(entry["url"])
    if problem is not None:
        raise JudgesFileError(f"{where}.url: {problem}")
    model = entry["model"]
    if not isinstance(model, str) or not model.strip():
        raise JudgesFileError(f"{where}.model: expected the judge's model name, got {_shown(model)}")
    env = entry.get("apiKeyEnv")
    key = None
    if env is not None:
        if not isinstance(env, str) or not _ENV_NAME.fullmatch(env):
            raise JudgesFileError(
                f"{where}.apiKeyEnv: expected the name of the environment variable holding the key (letters, "
                "digits and underscores, e.g. OPENAI_API_KEY), not the key itself"
            )
        key = environ.get(env, "")
        if not key.strip():
            raise JudgesFileError(
                f"{where}.apiKeyEnv: the environment variable {env} is not set or empty (an unset CI secret?): "
                "set it, or drop apiKeyEnv for a judge that needs no key"
            )
    return JudgeSpec(url=entry["url"].strip().rstrip("/"), model=model.strip(), api_key_env=env, api_key=key)


def load_judges(path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> list[JudgeSpec]:
    """The judges of a judges file (module docstring), each key read from its ``apiKeyEnv``.

    Args:
        path: The file.
        environ: Where keys are read from (default ``os.environ``).

    Returns:
        One :class:`JudgeSpec` per entry, in the file's order.

    Raises:
        JudgesFileError: the file cannot be read or is not JSON; not a list; no judge; an entry
            that is not an object, has an unknown field, lacks ``url`` or ``model``, has a URL
            that is not http(s) or carries credentials, an empty model, an ``apiKeyEnv`` that is
            no variable name or names an unset variable; a model given twice. The message names
            the file, ``judges[i]`` and the field.
    """
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise JudgesFileError(f"{name}: cannot be read ({exc.__class__.__name__}: {exc})") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JudgesFileError(f"{name}: not JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(value, list):
        raise JudgesFileError(
            f'{name}: expected a JSON list of judges, each {{"url", "model", "apiKeyEnv"}}, got {type(value).__name__}'
        )
    if not value:
        raise JudgesFileError(f"{name}: lists no judge")
    environment = os.environ if environ is None else environ
    specs = [_entry(name, i, entry, environment) for i, entry in enumerate(value)]
    for i, spec in enumerate(specs):
        for j in range(i):
            if specs[j].model == spec.model:
                raise JudgesFileError(
                    f"{name}: judges[{i}].model {spec.model!r} is also judges[{j}].model: each judge of a jury "
                    "needs its own model (its figures are keyed by it)"
                )
    return specs
