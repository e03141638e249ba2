"""Corpus documents (docs/dataset.md): reading, hashing and canonical text.

Each corpus file is read once, hashed (xxh3_64) as it streams in, and decoded;
its canonical text is what evidence spans' UTF-8 byte offsets point into.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import xxhash

from .errors import DatasetError

if TYPE_CHECKING:
    from .manifest import CorpusEntry

CHUNK_SIZE = 64 * 1024
"""Reference size of a read: tests build files spanning several of these."""

HASH_BUFFER_SIZE = 1024 * 1024
"""Bytes per read in ``hash_file``. With 64 KiB reads the per-read system call and
interpreter loop held hashing at about 0.7x the throughput of ``cat``; at 1 MiB that
cost vanishes while the buffer still sits in the CPU cache between the kernel's copy
and the hash (``benchmarks/bench_hash.py``)."""

HASH_CORPUS_HINT = "bump the dataset version and run `groundeval hash-corpus --dataset {dataset}`"
"""What to do when a corpus file and its recorded hash disagree (docs/dataset.md)."""

LINE_ENDING_HINT = (
    "the file matches once its CRLF/CR line endings are turned into LF: the checkout "
    "converted line endings (for example git's core.autocrlf). Keep corpus bytes exact with a "
    ".gitattributes rule such as `corpus/** -text`"
)
"""Added to a hash mismatch when LF-normalised bytes would match."""

_UTF8_BOM = b"\xef\xbb\xbf"


def canonical_json(records: list[Any]) -> str:
    """Canonical text of a json document (docs/dataset.md).

    Each record is serialised with sorted keys, separators ``(",", ":")`` and
    non-ASCII kept; records are joined by ``\\n``.
    """
    return "\n".join(json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for r in records)


def canonical_text(text: str) -> str:
    """Canonical text of a text document: ``\\r\\n`` and ``\\r`` become ``\\n`` (docs/dataset.md)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class CorpusDocument:
    """A loaded corpus document.

    Attributes:
        name: Corpus entry name (what evidence spans name).
        label: Corpus entry label.
        file: File name relative to ``corpus/``.
        format: ``json`` or ``text``.
        content: What ``POST /v1/documents`` sends: the list of JSON records (one
            object becomes a one-element list) or the canonical text (docs/target-contract.md).
        content_hash: xxh3_64 hex digest of the file's raw bytes.
        canonical: Canonical text; evidence offsets are UTF-8 byte offsets into it.
        canonical_bytes: ``canonical`` encoded as UTF-8.
    """

    name: str
    label: str
    file: str
    format: Literal["json", "text"]
    content: list[Any] | str
    content_hash: str
    canonical: str
    canonical_bytes: bytes = field(repr=False)

    def slice(self, start: int, end: int) -> str:
        """Text of the canonical bytes ``[start, end)``.

        Args:
            start: UTF-8 byte offset, inclusive.
            end: UTF-8 byte offset, exclusive.

        Raises:
            ValueError: Offsets out of ``[0, len(canonical_bytes)]``, reversed, or not
                on a character boundary; the message names the document.
        """
        data = self.canonical_bytes
        if not (isinstance(start, int) and isinstance(end, int)) or not 0 <= start <= end <= len(data):
            raise ValueError(
                f"span [{start}, {end}) is outside document {self.name!r} ({len(data)} UTF-8 bytes of canonical text)"
            )
        for offset in (start, end):
            # A UTF-8 continuation byte is 0b10xxxxxx: an offset there splits a character.
            if offset < len(data) and data[offset] & 0xC0 == 0x80:
                raise ValueError(
                    f"span [{start}, {end}) of document {self.name!r}: byte offset {offset} "
                    "is not on a character boundary"
                )
        return data[start:end].decode("utf-8")


def hash_file(path: str | Path, buffer_size: int = HASH_BUFFER_SIZE) -> str:
    """xxh3_64 hex digest of a file's bytes, streamed in ``buffer_size``-byte reads (docs/dataset.md).

    Memory stays at one buffer whatever the file's size.

    Raises:
        OSError: The file cannot be read.
    """
    hasher = xxhash.xxh3_64()
    buffer = bytearray(buffer_size)
    view = memoryview(buffer)
    # Unbuffered: each readinto is one read(2) straight into our buffer, no second copy.
    with open(path, "rb", buffering=0) as handle:
        while count := handle.readinto(buffer):
            hasher.update(view[:count])
    return hasher.hexdigest()


def _read_hashed(path: Path) -> tuple[bytearray, str]:
    """Read a corpus file once, hashing it as it streams in; return its bytes and xxh3_64 digest.

    The loader keeps the bytes (to decode them), so they land in one buffer sized
    from ``fstat``; each ``HASH_BUFFER_SIZE`` read goes straight into it and into the
    hasher, never a ``read()`` of the whole file followed by a second pass (docs/dataset.md).
    """
    hasher = xxhash.xxh3_64()
    with open(path, "rb", buffering=0) as handle:
        buffer = bytearray(os.fstat(handle.fileno()).st_size)
        filled = 0
        with memoryview(buffer) as view:
            while filled < len(buffer):
                count = handle.readinto(view[filled : filled + HASH_BUFFER_SIZE])
                if not count:  # the file shrank since fstat
                    break
                hasher.update(view[filled : filled + count])
                filled += count
        tail = handle.read()  # whatever a growing file added since fstat
    hasher.update(tail)
    if filled < len(buffer) or tail:
        buffer[filled:] = tail
    # The bytearray itself, not a bytes copy of it: decoding and JSON parsing take either.
    return buffer, hasher.hexdigest()


def _decode_utf8(data: bytes | bytearray, path: Path) -> str:
    if data.startswith(_UTF8_BOM):
        raise DatasetError(
            f"{path}: starts with a UTF-8 byte-order mark (EF BB BF); remove it (save as UTF-8 without BOM)",
            path=path,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not valid UTF-8 at byte offset {exc.start} ({exc.reason})", path=path) from None


def _json_error(exc: json.JSONDecodeError, path: Path) -> DatasetError:
    return DatasetError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", path=path)


def _load_document(entry: CorpusEntry, data: bytes | bytearray, digest: str, path: Path) -> CorpusDocument:
    text = _decode_utf8(data, path)
    if entry.format == "text":
        canonical = canonical_text(text)
        content: list[Any] | str = canonical
    else:
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _json_error(exc, path) from None
        except (ValueError, RecursionError) as exc:
            raise DatasetError(f"{path}: unreadable JSON: {exc}", path=path) from None
        records = [parsed] if isinstance(parsed, dict) else parsed
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise DatasetError(
                f"{path}: a json corpus file must hold an array of objects or one object "
                f"(corpus entry {entry.name!r}); use format 'text' for plain text",
                path=path,
            )
        canonical = canonical_json(records)
        content = records
    return CorpusDocument(
        name=entry.name,
        label=entry.label,
        file=entry.file,
        format=entry.format,
        content=content,
        content_hash=digest,
        canonical=canonical,
        canonical_bytes=canonical.encode("utf-8"),
    )


def _hash_mismatch(
    path: Path, manifest_path: Path, expected: str, actual: str, data: bytes | bytearray, root: Path
) -> DatasetError:
    message = (
        f"{path}: corpus hash mismatch: {manifest_path.name} records {expected}, the file hashes to {actual}. "
        f"If the change is intended, {HASH_CORPUS_HINT.format(dataset=root)}."
    )
    normalised = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if normalised != data and xxhash.xxh3_64_hexdigest(normalised) == expected:
        message += f" Note: {LINE_ENDING_HINT}."
    return DatasetError(message, path=path)
