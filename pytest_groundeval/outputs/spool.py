"""Item outcomes kept for the session's outputs on disk, not in memory (issue 24, memory per item).

The HTML page lists every item and the Markdown table the failed ones; the plugin
writes them at the end of the session. ``ItemSpool`` holds those items (wire dicts)
in a temporary file, one JSON line each, and reads them back in order as often as the
page needs; memory stays flat in the number of items. No pytest import here.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any


class ItemSpool:
    """A re-iterable sequence of item outcomes (wire dicts), stored as JSON lines in a temporary file.

    ``add`` appends one; each ``iter()`` reads them all back, in the order added, from
    the start of the file (several passes may run one after another or interleaved).
    The file is created in the system's temporary directory on the first ``add`` and
    removed by ``close`` or when the spool is garbage-collected. When the file cannot be
    created or written (a full or read-only temporary directory), the spool drops its
    items and keeps the error (``error``); reading it then raises that error, which the
    outputs report as a file not written, while the session's run and gate go on.
    """

    def __init__(self) -> None:
        self._file: Any = None
        self._count = 0
        self.error: OSError | None = None
        """Why the items could not be kept on disk, once that happened (then nothing more is kept)."""

    def add(self, item: Mapping[str, Any]) -> None:
        """Append one item's wire dict (JSON: strings, numbers, lists, objects, no NaN).

        Raises:
            ValueError: ``item`` holds NaN or infinity.
            TypeError: ``item`` holds a value JSON cannot encode.

        An ``OSError`` creating or writing the temporary file is not raised: it is kept in
        ``error``, the items are dropped, and reading the spool raises it.
        """
        if self.error is not None:
            return
        line = json.dumps(item, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        try:
            if self._file is None:
                self._file = tempfile.NamedTemporaryFile(prefix="groundeval-items.", suffix=".jsonl")
            self._file.write(line.encode("utf-8") + b"\n")
        except OSError as exc:
            self.close()
            self.error = exc
            return
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        # A spool that lost its items is not empty: the outputs' ``report.get("items") or []``
        # must read it (and meet its error), not write a page of no items.
        return self._count > 0 or self.error is not None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The items added so far, read back from the file, oldest first.

        Raises:
            OSError: The file cannot be read back, or could not be written (``error``).
        """
        if self.error is not None:
            raise OSError(f"the items could not be kept in a temporary file: {self.error}")
        if self._file is None:
            return
        self._file.flush()
        with open(self._file.name, "rb") as spool:
            for line in spool:
                yield json.loads(line)

    def close(self) -> None:
        """Remove the file; the spool is empty afterwards. Never raises (a full disk may refuse the
        last buffered write: the file is removed all the same)."""
        if self._file is not None:
            spool, self._file = self._file, None
            try:
                spool.close()
            except OSError:
                pass
        self._count = 0
