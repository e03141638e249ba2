"""Spawn and setup command placeholders (docs/target-contract.md): ``{port}``, ``{data_dir}``, ….

A leaf (standard library only), so that the plugin checks ``--eval-spawn`` and
``--eval-setup`` while it parses its options, without loading the HTTP stack of
``targets.spawn``, which fills them when it starts the target.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["PLACEHOLDERS", "check_placeholders", "fill_placeholders"]

PLACEHOLDERS = ("port", "data_dir", "llm_url", "embed_url", "api_key")
"""Placeholder names substituted in spawn and setup commands (docs/target-contract.md)."""

_TOKEN = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_-]*)\}\}|(\$?)\{([A-Za-z_][A-Za-z0-9_-]*)\}")
"""A placeholder-shaped token: ``{{word}}`` (an escaped literal), or ``{word}`` / ``${word}``.

Only a brace pair around one word is placeholder-shaped: JSON (``{"a": 1}``), awk
programs with spaces (``{print $1}``), ``find``'s ``{}`` and brace lists (``{a,b}``)
are not, and pass through untouched."""


def _placeholder_list() -> str:
    return ", ".join("{" + name + "}" for name in PLACEHOLDERS)


def _unknown(command: str) -> list[str]:
    return [
        m.group(3)
        for m in _TOKEN.finditer(command)
        if m.group(3) is not None and not m.group(2) and m.group(3) not in PLACEHOLDERS
    ]


def check_placeholders(command: str) -> None:
    """Raise ``ValueError`` if ``command`` uses a ``{word}`` that is not a placeholder.

    The message names each unknown word, lists the valid placeholders and says how
    to write a literal ``{word}`` (``{{word}}``). A shell parameter ``${word}`` is
    not a placeholder use (docs/target-contract.md).
    """
    unknown = list(dict.fromkeys(_unknown(command)))
    if not unknown:
        return
    names = ", ".join("{" + name + "}" for name in unknown)
    first = unknown[0]
    raise ValueError(
        f"the command {command!r} uses {names}, which "
        f"{'is not a placeholder' if len(unknown) == 1 else 'are not placeholders'}: the placeholders are "
        f"{_placeholder_list()} (write {{{{{first}}}}} for a literal {{{first}}})"
    )


def fill_placeholders(command: str, values: Mapping[str, str | None]) -> str:
    """Substitute the placeholders of ``command`` in one pass (docs/target-contract.md).

    ``{name}`` (also inside a shell ``${name}``) becomes ``values[name]`` verbatim;
    ``{{word}}`` becomes a literal ``{word}``; a ``${word}`` that is no placeholder is
    the shell's and stays; any other brace text that is not one ``{word}`` stays.

    Raises:
        ValueError: ``command`` uses an unknown ``{word}`` (see ``check_placeholders``),
            or a placeholder whose value is None.
    """
    check_placeholders(command)

    def substitute(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return "{" + match.group(1) + "}"
        dollar, name = match.group(2), match.group(3)
        if name not in PLACEHOLDERS:
            return match.group(0)  # a shell ${VAR}
        value = values.get(name)
        if value is None:
            raise ValueError(f"the command {command!r} uses {{{name}}} but no value is configured for it")
        return dollar + value

    return _TOKEN.sub(substitute, command)
