"""The repository carries its own contract (docs/architecture.md): every docs page it cites exists.

Code, messages, tests, the README and the docs pages cite ``docs/<page>.md``; a
citation of a page that does not exist, or of the design document's numbered
sections, which are not in the repository, leaves a reader with nothing to follow.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

DOCS_CITATION = re.compile(r"docs/([A-Za-z0-9_-]+\.md)")
"""``docs/<page>.md`` anywhere in a file."""

MARKDOWN_LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)\s]*)?\)")
"""A relative markdown link to a ``.md`` file: ``[text](gate.md#anchor)``."""

BARE_PAGE = re.compile(r"(?<![\w/.-])([a-z0-9][a-z0-9-]*\.md)\b")
"""A docs page named by itself in a docs page's prose: ``(target-contract.md)``."""

# Built from parts so that this file does not cite what it forbids.
SECTION_SIGN = "SPEC " + "\u00a7"


def _files(under: Path) -> Iterator[Path]:
    for path in sorted(under.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            yield path


def _text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def repository_files(root: Path) -> list[Path]:
    """Every file of the repository outside ``.git``: tracked and untracked, ignored ones left out.

    Without git (an unpacked archive) every file outside dot-directories and caches.
    """
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return [p for p in _files(root) if not any(part.startswith(".") for part in p.relative_to(root).parts[:-1])]
    paths = (root / name for name in listed.decode("utf-8", errors="replace").split("\0") if name)
    return [p for p in paths if p.is_file()]


def missing_citations(files: Iterable[Path], docs: Path) -> list[str]:
    """``<file>: docs/<page>.md`` for each cited docs page that does not exist under ``docs``."""
    missing = []
    for path in files:
        for page in sorted(set(DOCS_CITATION.findall(_text(path)))):
            if not (docs / page).is_file():
                missing.append(f"{path}: docs/{page}")
    return missing


def missing_links(pages: Iterable[Path], docs: Path) -> list[str]:
    """Links and bare page names in docs pages that resolve to no file."""
    missing = []
    for page in pages:
        text = _text(page)
        for target in sorted(set(MARKDOWN_LINK.findall(text))):
            if "://" not in target and not (page.parent / target).is_file():
                missing.append(f"{page}: link {target}")
        # File names in commands and code (`--markdown report.md`) are not page references.
        prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
        prose = re.sub(r"(?m)^(?:    |\t).*$", "", re.sub(r"`[^`\n]*`", "", prose))
        for name in sorted(set(BARE_PAGE.findall(prose))):
            if not (docs / name).is_file():
                missing.append(f"{page}: {name}")
    return missing


def section_citations(files: Iterable[Path]) -> list[str]:
    """``file:line`` of each line citing the design document's sections."""
    found = []
    for path in files:
        for number, line in enumerate(_text(path).splitlines(), 1):
            if SECTION_SIGN in line:
                found.append(f"{path}:{number}")
    return found


def test_every_cited_docs_page_exists():
    files = [
        *_files(ROOT / "pytest_groundeval"),
        *_files(ROOT / "tests"),
        ROOT / "README.md",
        *_files(DOCS),
    ]
    assert missing_citations(files, DOCS) == []


def test_links_between_docs_pages_resolve():
    assert missing_links(sorted(DOCS.glob("*.md")), DOCS) == []


def test_nothing_cites_the_design_documents_sections():
    files = repository_files(ROOT)
    assert any(p.name == "README.md" for p in files), "the repository listing found no README.md"
    assert section_citations(files) == []


def test_the_checks_see_what_they_look_for(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "gate.md").write_text("see [scoring](scoring.md) and (options.md); [gate](gate.md)\n")
    code = tmp_path / "mod.py"
    nowhere = "docs/" + "nowhere.md"
    code.write_text(f'"""Rules: docs/gate.md and {nowhere}."""\nx = 1  # {SECTION_SIGN}5\n')
    assert missing_citations([code], docs) == [f"{code}: {nowhere}"]
    assert missing_links([docs / "gate.md"], docs) == [
        f"{docs / 'gate.md'}: link scoring.md",
        f"{docs / 'gate.md'}: options.md",
        f"{docs / 'gate.md'}: scoring.md",
    ]
    assert section_citations([code, docs / "gate.md"]) == [f"{code}:2"]


def test_the_architecture_page_lists_every_module():
    """docs/architecture.md is the one-page map: one line per module of the package."""
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    package = ROOT / "pytest_groundeval"
    modules = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py"))
    assert [m for m in modules if f"`{m}`" not in page] == []
