"""The optional on-disk judge cache (docs/citation.md, "Cache").

One JSON file per verdict under a directory (by convention ``.groundeval/judge-cache``),
named by the xxh3_128 digest of the judge model, :data:`.prompt.PROMPT_VERSION` and
the exact request messages. Only parsed verdicts are stored, never an unparseable
reply or a judge error, and never the API key or the endpoint URL, so an unchanged
re-run asks the judge nothing and a changed prompt, model or input misses.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import xxhash

from ..core.judging import JUDGE_VERDICTS
from .prompt import PROMPT_VERSION

__all__ = ["DEFAULT_CACHE_DIR", "JudgeCache", "cache_key"]

DEFAULT_CACHE_DIR = Path(".groundeval") / "judge-cache"
"""Conventional cache directory, relative to the run's root directory."""


def cache_key(model: str, messages: Sequence[Mapping[str, Any]], prompt_version: str = PROMPT_VERSION) -> str:
    """The cache key of one judge request: 32 hex digits of xxh3_128 over model, prompt version and messages."""
    material = json.dumps(
        {"model": model, "promptVersion": prompt_version, "messages": list(messages)},
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
    )
    return xxhash.xxh3_128_hexdigest(material.encode("utf-8"))


class JudgeCache:
    """Verdicts on disk, keyed by :func:`cache_key`.

    Args:
        directory: Where the files live; created on the first write.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.directory)!r})"

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> tuple[str, str] | None:
        """The cached ``(verdict, rationale)``, or None (a missing, unreadable or invalid entry is a miss)."""
        try:
            value = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(value, dict):
            return None
        verdict, rationale = value.get("verdict"), value.get("rationale")
        if verdict in JUDGE_VERDICTS and isinstance(rationale, str) and rationale.strip():
            return verdict, rationale
        return None

    def put(self, key: str, verdict: str, rationale: str, *, model: str) -> None:
        """Store a parsed verdict atomically (write to a temporary file, then rename)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps(
            {"verdict": verdict, "rationale": rationale, "model": model, "promptVersion": PROMPT_VERSION},
            ensure_ascii=False,
        )
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(body)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
