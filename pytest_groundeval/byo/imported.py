"""Rows as a dataset of ``citation`` items (docs/byo.md, "Import"): ``groundeval import``.

Each row becomes one ``citation`` item (docs/citation.md):

- a row with a recorded answer keeps it verbatim as the item's ``response``, its
  contexts as the numbered sources ``[1]``, ``[2]``, … in their order, so the
  answer is judged with no target call (an answer that cites no ``[N]`` marker
  fails its item: an answer without citations does not pass a citation item);
- a row without one (or every row, with ``live=True``) becomes a live question,
  sent to the target.

The distinct contexts of all rows become the corpus, one json file
(``corpus/contexts.json``, one record ``{"id", "text"}`` per context, label
``CONTEXT``), so the target can be given them and the evidence checks can find
them; its xxh3_64 hash is computed. The manifest's ``floors`` arm the gate with
``citationMetadataAccuracy >= 0.9`` (``DEFAULT_FLOORS``); without a bound a
citation dataset gates nothing and fails (docs/gate.md). A reference answer is
kept in the item's ``origin`` (with the file and line it came from): it is not
evaluated. A README states the source file, its format, the row count and the date.

``write_imported`` builds everything in a temporary directory beside ``out``,
loads it with the validating loader, and only then moves it into place: a failure
leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from importlib import metadata
from pathlib import Path
from typing import Any

from ..core.dataset import hash_file, load_dataset
from ..core.kinds.citation.text import cited_markers, paragraphs
from .rows import Row

__all__ = ["CORPUS_FILE", "CORPUS_LABEL", "DEFAULT_FLOORS", "Imported", "build_manifest", "write_imported"]

CORPUS_FILE = "contexts.json"
"""The one corpus file of an imported dataset."""

CORPUS_LABEL = "CONTEXT"
"""Its corpus label."""

DEFAULT_FLOORS = {"citationMetadataAccuracy": 0.9}
"""The bound an imported dataset's manifest starts with: at least 9 of 10 cited paragraphs cite a source that exists
(and, with a ``mentionPattern``, name it rightly); edit it to the figure a known-good run measures (docs/gate.md)."""

VERSION = "imported-1"
"""The imported dataset's version; bump it when you change the items or the corpus (docs/dataset.md)."""


@dataclass(frozen=True)
class Imported:
    """What ``write_imported`` wrote."""

    out: Path
    """The dataset directory."""
    items: int
    """Items written (one per row)."""
    recorded: int
    """Items with a recorded answer."""
    live: int
    """Items with a live question."""
    contexts: int
    """Distinct contexts in the corpus."""
    uncited: int
    """Recorded answers with no paragraph that carries a ``[N]`` or ``[S#]`` marker (their items will fail)."""


def build_manifest(rows: Sequence[Row], *, fmt: str, source: str, live: bool = False) -> tuple[dict[str, Any], list[dict[str, str]]]:  # fmt: skip
    """The manifest (without ``corpusHashes``) and the corpus records of ``rows``.

    Args:
        rows: The rows, in file order.
        fmt: Their format (an item id is ``<fmt>-<n>`` unless the row has its own id).
        source: The source file's name, recorded in each item's ``origin``.
        live: Make every row a live question, dropping recorded answers.

    Returns:
        ``(manifest, records)``: the manifest dict, and ``[{"id", "text"}]`` for ``contexts.json``.
    """
    context_ids: dict[str, str] = {}
    for row in rows:
        for context in row.contexts:
            context_ids.setdefault(context, f"ctx-{len(context_ids) + 1:04d}")
    records = [{"id": key, "text": text} for text, key in context_ids.items()]
    items: list[dict[str, Any]] = []
    width = max(4, len(str(len(rows))))
    taken = {row.id for row in rows if row.id is not None}
    for number, row in enumerate(rows, 1):
        ident = row.id
        if ident is None:
            ident = f"{fmt}-{number:0{width}d}"
            while ident in taken:  # a row's own id took the number this row would get
                ident += "x"
            taken.add(ident)
        recorded = row.answer is not None and not live
        origin: dict[str, str | int] = {"format": fmt, "file": source, "line": row.line}
        if row.reference is not None:
            origin["reference"] = row.reference
        item: dict[str, Any] = {
            "id": ident,
            "kind": "citation",
            "tags": ["imported", "recorded" if recorded else "live"],
            "question": row.question,
        }
        if recorded:
            item["response"] = {
                "answer": row.answer,
                "sources": [
                    {"marker": str(index), "document": CORPUS_FILE, "text": context}
                    for index, context in enumerate(row.contexts, 1)
                ],
            }
        item["origin"] = origin
        items.append(item)
    manifest: dict[str, Any] = {"version": VERSION, "floors": dict(DEFAULT_FLOORS)}
    if records:
        manifest["corpus"] = [{"name": CORPUS_FILE, "label": CORPUS_LABEL, "file": CORPUS_FILE, "format": "json"}]
    manifest["items"] = items
    return manifest, records


def uncited_answers(rows: Sequence[Row]) -> int:
    """Recorded answers none of whose paragraphs carries a citation marker (docs/citation.md, the paragraph rule)."""
    return sum(
        1 for row in rows if row.answer is not None and not any(cited_markers(p) for p in paragraphs(row.answer))
    )


def write_imported(
    rows: Sequence[Row],
    out: Path,
    *,
    fmt: str,
    source: Path,
    container: str,
    live: bool = False,
    today: date | None = None,
    command: str = "",
) -> Imported:
    """Write the dataset of ``rows`` to ``out`` (module docstring), whole or not at all.

    Args:
        rows: The rows (``rows.read_rows``).
        out: The dataset directory: must not exist, or be empty.
        fmt: The rows' format.
        source: The file they came from (its name goes into the README and each item's origin).
        container: How the file was read (``csv``, ``json``, ``jsonl``, ``yaml``), for the README.
        live: Make every row a live question.
        today: The date the README states (default: today, UTC).
        command: The command line to quote in the README.

    Returns:
        What was written.

    Raises:
        FileExistsError: ``out`` exists and is not an empty directory.
        DatasetError: The written dataset does not load (a bug; nothing is left behind).
        OSError: Writing failed (nothing is left behind).
    """
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out}: exists and is not empty; give a new directory to --out")
    manifest, records = build_manifest(rows, fmt=fmt, source=source.name, live=live)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Not tempfile.mkdtemp: its directory is private (0700), and the dataset should get the usual permissions.
    staging = out.parent / f".{out.name}.import-{os.getpid()}-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        if records:
            corpus = staging / "corpus"
            corpus.mkdir()
            (corpus / CORPUS_FILE).write_text(
                json.dumps(records, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
            )
            manifest = _with_hashes(manifest, {CORPUS_FILE: hash_file(corpus / CORPUS_FILE)})
        (staging / "manifest.json").write_text(_manifest_text(manifest), encoding="utf-8")
        recorded = sum(1 for item in manifest["items"] if "response" in item)
        imported = Imported(out=out, items=len(rows), recorded=recorded, live=len(rows) - recorded,
                            contexts=len(records), uncited=0 if live else uncited_answers(rows))  # fmt: skip
        when = today or date.today()
        (staging / "README.md").write_text(
            _readme(imported, source=source.name, fmt=fmt, container=container, when=when, command=command),
            encoding="utf-8",
        )
        load_dataset(staging)
        if out.exists():
            out.rmdir()  # empty, checked above
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return imported


def _with_hashes(manifest: dict[str, Any], hashes: dict[str, str]) -> dict[str, Any]:
    ordered: dict[str, Any] = {}
    for key, value in manifest.items():
        ordered[key] = value
        if key == "corpus":
            ordered["corpusHashes"] = hashes
    return ordered


def _manifest_text(manifest: dict[str, Any]) -> str:
    """The manifest with one line per item (as the shipped datasets), so a diff shows the item that changed."""
    head = {key: value for key, value in manifest.items() if key != "items"}
    lines = ["{"]
    for key, value in head.items():
        lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},")
    lines.append('  "items": [')
    items = [f"    {json.dumps(item, ensure_ascii=False)}" for item in manifest["items"]]
    lines.append(",\n".join(items))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _readme(imported: Imported, *, source: str, fmt: str, container: str, when: date, command: str) -> str:
    try:
        version = metadata.version("pytest-groundeval")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source checkout without an install
        version = "unknown"
    rows = f"{imported.items} ({imported.recorded} with a recorded answer, {imported.live} live question(s))"
    uncited = (
        f"\n{imported.uncited} recorded answer(s) carry no `[N]` marker: those items fail, since an answer "
        "without citations does not pass a citation item (docs/citation.md). Import with `--live` to ask "
        "the questions instead.\n"
        if imported.uncited
        else ""
    )
    return f"""# {imported.out.name}: imported from {source}

| | |
|---|---|
| source | `{source}` |
| format | {fmt} (read as {container}) |
| rows | {rows} |
| contexts | {imported.contexts} distinct, in `corpus/{CORPUS_FILE}` (label `{CORPUS_LABEL}`) |
| date | {when.isoformat()} |
| by | `{command or f"groundeval import {source} --format {fmt}"}` (pytest-groundeval {version}) |

Every row is one `citation` item (docs/citation.md), tagged `imported` and
`recorded` or `live`. A recorded answer is judged as it was recorded, its
contexts being the sources `[1]`, `[2]`, … in their order, with no target call; a
live question is sent to the target. Each item's `origin` names the line of
`{source}` it came from, and holds the row's reference answer, if it had one
(not evaluated).
{uncited}
## Gate floors

`"floors": {json.dumps(DEFAULT_FLOORS)}`: at least 9 of 10 cited paragraphs
must cite a source that exists. It is a starting point, not a measurement: set
it from the figure a known-good run measures (docs/gate.md), and bump the
version (`{VERSION}`) whenever the items or the corpus change.

    pytest --eval-dataset={imported.out.name}
"""
