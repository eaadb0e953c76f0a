"""An answer's text for a terminal: the few Markdown forms the writers use (headings, bold, bullets) rendered as
readable text, styled with bold and underline when the output is a terminal that shows them, plain otherwise."""

from __future__ import annotations

import re

import click

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")


def terminal_text(markdown: str, *, styled: bool = False) -> str:
    """Headings become their words (underlined when `styled`, with a blank line before), `**bold**` its words
    (bold when `styled`), `- item` a bullet; everything else is kept as it is. No `#` or `**` is left."""
    out: list[str] = []
    for line in markdown.splitlines():
        heading = _HEADING.match(line.strip())
        if heading:
            words = _BOLD.sub(lambda m: m.group(1) or m.group(2), heading.group(2)).strip()
            if out and out[-1].strip():
                out.append("")
            out.append(click.style(words, bold=True, underline=True) if styled else words)
            if not styled:
                out.append("-" * min(len(words), 100))
            continue
        text = _BOLD.sub(
            lambda m: click.style(m.group(1) or m.group(2), bold=True) if styled else (m.group(1) or m.group(2)), line
        )
        stripped = text.lstrip()
        if stripped.startswith("- "):
            text = f"{text[: len(text) - len(stripped)]}  • {stripped[2:]}"
        out.append(text)
    return "\n".join(out)
