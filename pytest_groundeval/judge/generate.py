"""Citation items generated from a dataset's corpus with an LLM (docs/citation.md); ``groundeval generate-questions``
(``cli/generate_questions.py``) is its command.

Two strategies, mixed ``--seeded-ratio`` (default 2:1, seeded:free) by a seeded RNG:

- **seeded**: a random corpus record; its first 500 characters and its metadata are
  sent, asking for a natural question broader than the snippet that does not name
  the person the metadata names;
- **free**: a topic from the palette (``--topic``, repeatable; by default the corpus
  labels and the values of its records' string metadata), with an avoid-list of the
  last 20 questions.

The reply must be ``{"question": …}`` JSON (one fence unwrapped); prose is dropped.
A question already generated (case and spacing ignored) is dropped, as is an empty or
unreadable reply; the run stops after ``3 * N`` attempts if it cannot reach N. Each
item keeps ``origin``: the strategy, the document and record index it came from (or
the topic), and the model. The output directory gets a copy of the corpus, the same
corpus hashes and ``mentionPattern``, and the new items; it is loaded with the
validating loader before the command reports success.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import sys
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.dataset import Dataset, load_dataset
from ..core.kinds.citation.text import paragraphs
from .parse import unwrap_fence
from .prompt import GENERATE_SCHEMA, GENERATE_SCHEMA_NAME, SEED_SNIPPET_CHARS, generate_messages

if TYPE_CHECKING:
    from openai.types.shared_params import ResponseFormatJSONSchema

__all__ = ["AVOID_WINDOW", "corpus_records", "generate_questions", "write_generated"]

AVOID_WINDOW = 20
"""Recent questions sent as the free strategy's avoid-list."""

VERSION_SUFFIX = "-generated"
"""Appended to the source dataset's version for the generated dataset."""


def corpus_records(dataset: Dataset) -> list[dict[str, Any]]:
    """Every corpus record: ``{"document", "record", "text", "metadata"}``.

    A json document's records are its objects: ``text`` is the object's ``text`` field
    when it is a string, else its canonical JSON; ``metadata`` its other string fields.
    A text document's records are its blank-line separated paragraphs, with no metadata.
    """
    records: list[dict[str, Any]] = []
    for name, document in dataset.documents.items():
        if document.format == "json":
            for index, record in enumerate(document.content):
                text = (
                    record.get("text")
                    if isinstance(record.get("text"), str)
                    else json.dumps(record, ensure_ascii=False, sort_keys=True)
                )
                metadata = {k: v for k, v in record.items() if k != "text" and isinstance(v, str)}
                if text.strip():
                    records.append({"document": name, "record": index, "text": text, "metadata": metadata})
        else:
            for index, text in enumerate(paragraphs(str(document.content))):
                records.append({"document": name, "record": index, "text": text, "metadata": {}})
    return records


def _palette(dataset: Dataset, records: list[dict[str, Any]]) -> list[str]:
    topics = {document.label for document in dataset.documents.values()}
    for record in records:
        topics.update(v for k, v in record["metadata"].items() if k not in ("url", "link", "id") and len(v) < 80)
    return sorted(topics)


def _question_of(content: str | None) -> str | None:
    if not content or not content.strip():
        return None
    body = unwrap_fence(content)
    try:
        value = json.loads(body)
    except ValueError:
        return None  # prose: a sentence around a question is not a question
    question = value.get("question") if isinstance(value, dict) else None
    return " ".join(question.split()) if isinstance(question, str) and question.strip() else None


def _progress(done: int, total: int) -> None:
    width = 30
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\rgenerate-questions [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    sys.stderr.flush()


async def generate_questions(
    dataset: Dataset,
    *,
    n: int,
    llm_url: str,
    model: str,
    api_key: str | None = None,
    seed: int = 0,
    seeded_ratio: float = 2 / 3,
    topics: list[str] | None = None,
    pace_ms: float = 0.0,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """Generate up to ``n`` distinct citation items (module docstring).

    Args:
        dataset: A loaded ``Dataset`` (its corpus is the seed material).
        n: Items wanted.
        llm_url: OpenAI-compatible base URL.
        model: Model name.
        api_key: API key (never stored or printed).
        seed: RNG seed: the same seed, corpus and replies give the same items.
        seeded_ratio: Share of attempts using the seeded strategy (default 2/3: 2:1).
        topics: The free strategy's palette; None derives it from the corpus.
        pace_ms: Milliseconds to wait between requests.
        progress: Draw a progress bar on stderr.

    Returns:
        Item dicts in generation order (ids ``gen-0001`` …).

    Raises:
        RuntimeError: The LLM could not be reached (the message names the URL, never the key).
    """
    import openai

    rng = random.Random(seed)
    records = corpus_records(dataset)
    palette = topics or _palette(dataset, records)
    if not records and not palette:
        raise RuntimeError("the dataset has no corpus record and no topic to generate from")
    recent: deque[str] = deque(maxlen=AVOID_WINDOW)
    seen: set[str] = set()
    items: list[dict[str, Any]] = []
    client = openai.AsyncOpenAI(base_url=llm_url, api_key=api_key or "EMPTY", max_retries=2)
    response_format: ResponseFormatJSONSchema = {
        "type": "json_schema",
        "json_schema": {"name": GENERATE_SCHEMA_NAME, "schema": GENERATE_SCHEMA},
    }
    try:
        for _attempt in range(3 * n):
            if len(items) >= n:
                break
            seeded = bool(records) and (not palette or rng.random() < seeded_ratio)
            if seeded:
                record = records[rng.randrange(len(records))]
                payload: dict[str, Any] = {"strategy": "seeded", "snippet": record["text"][:SEED_SNIPPET_CHARS],
                                           "metadata": record["metadata"], "avoid": list(recent)}  # fmt: skip
                origin: dict[str, Any] = {
                    "strategy": "seeded",
                    "document": record["document"],
                    "record": record["record"],
                }
            else:
                topic = palette[rng.randrange(len(palette))]
                payload = {"strategy": "free", "topic": topic, "avoid": list(recent)}
                origin = {"strategy": "free", "topic": topic}
            try:
                completion = await client.chat.completions.create(
                    model=model, messages=generate_messages(payload), temperature=0.7, response_format=response_format
                )
            except openai.APIError as exc:
                raise RuntimeError(f"the LLM at {llm_url} failed: {type(exc).__name__}") from None
            question = _question_of(completion.choices[0].message.content if completion.choices else None)
            key = " ".join(question.casefold().split()) if question else ""
            if question and key not in seen:
                seen.add(key)
                recent.append(question)
                items.append({"id": f"gen-{len(items) + 1:04d}", "kind": "citation", "tags": ["generated"],
                              "question": question, "origin": {**origin, "model": model}})  # fmt: skip
            if progress:
                _progress(len(items), n)
            if pace_ms:
                await asyncio.sleep(pace_ms / 1000.0)
    finally:
        await client.close()
        if progress:
            sys.stderr.write("\n")
    return items


def write_generated(dataset: Dataset, items: list[dict[str, Any]], out: Path) -> Path:
    """Write the generated dataset: the source's corpus files and hashes, its mentionPattern, the items.

    Raises:
        DatasetError: The written dataset does not load (a bug; reported plainly).
    """
    source = json.loads(dataset.manifest_path.read_text(encoding="utf-8"))
    manifest: dict[str, Any] = {
        "version": f"{dataset.version}{VERSION_SUFFIX}",
        "corpus": source.get("corpus", []),
        "corpusHashes": source.get("corpusHashes", {}),
    }
    if source.get("mentionPattern"):
        manifest["mentionPattern"] = source["mentionPattern"]
    manifest["items"] = items
    out.mkdir(parents=True, exist_ok=True)
    if (out / "corpus").exists():
        shutil.rmtree(out / "corpus")
    for entry in manifest["corpus"]:
        target = out / "corpus" / entry["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(dataset.root / "corpus" / entry["file"], target)
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    load_dataset(out)
    return out
