"""The report's table of contents: heading ids as Markdown renderers make them, so the links resolve in report.md
and report.html alike."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass


def anchor(title: str, taken: set[str] | None = None) -> str:
    """The id of a heading, as GitHub and most Markdown renderers make it (lower case, punctuation dropped, spaces to
    hyphens; "-1", "-2" for repeats), so the contents' links resolve in report.md and report.html alike."""
    base = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
    slug, n = base, 0
    while taken is not None and slug in taken:
        n += 1
        slug = f"{base}-{n}"
    if taken is not None:
        taken.add(slug)
    return slug


@dataclass(frozen=True)
class Contents:
    """The report's headings in order, with their ids."""

    entries: list[tuple[str, str]]  # (title, anchor)

    @classmethod
    def of(cls, titles: Sequence[str]) -> Contents:
        taken: set[str] = set()
        return cls([(title, anchor(title, taken)) for title in titles])

    def markdown(self) -> str:
        lines = ["**Contents**", ""]
        lines += [f"{i}. [{title}](#{slug})" for i, (title, slug) in enumerate(self.entries, start=1)]
        return "\n".join(lines)

    def html(self) -> str:
        e = html.escape
        items = "".join(f"<li><a href='#{e(slug)}'>{e(title)}</a></li>" for title, slug in self.entries)
        return f"<nav class='toc' aria-label='Contents'><p><strong>Contents</strong></p><ol>{items}</ol></nav>"


_MD_H2 = re.compile(r"^## (.+?)\s*$", re.M)
HTML_H2 = re.compile(r"<h2>(.*?)</h2>", re.S)


def markdown_titles(text: str) -> list[str]:
    """The second-level headings of Markdown (the analyses' sections)."""
    return _MD_H2.findall(text)
