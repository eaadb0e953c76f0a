"""report.html: the report's sections as one self-contained page (plots inline), the analyses' HTML given the
contents' heading ids."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence

from oprag_pipeline.report.contents import HTML_H2, Contents, anchor
from oprag_pipeline.report.sections import Section


def with_ids(page: str, slugs: Sequence[str]) -> str:
    """`<h2>` headings without an id (the analyses' HTML) given the contents' ids, in order."""
    remaining = iter(slugs)

    def add(match: re.Match[str]) -> str:
        slug = next(remaining, None)
        return match.group(0) if slug is None else f"<h2 id='{slug}'>{match.group(1)}</h2>"

    return HTML_H2.sub(add, page)


STYLE = (
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.4}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
    "td:first-child,th:first-child{text-align:left}img{max-width:100%}"
    ".lead{font-size:1.25em;border-left:4px solid #0072b2;padding:.4em .8em;background:#f4f8fb}"
    ".toc{border:1px solid #ddd;border-radius:6px;padding:.2em 1em;margin:1em 0;display:inline-block}"
)


def html_page(domain: str, sections: Sequence[Section], *, lead: str = "", contents: Contents | None = None) -> str:
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>Opinion-fidelity report: {e(domain)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>Opinion-fidelity report: {e(domain)}</h1>",
    ]
    if lead:
        parts.append(f"<p class='lead'>{e(lead)}</p>")
    if contents is not None:
        parts.append(contents.html())
    # the contents list these sections first, in this order: their ids are the contents' anchors
    slugs = [slug for _, slug in contents.entries] if contents is not None else []
    for index, s in enumerate(sections):
        slug = slugs[index] if index < len(slugs) else anchor(s.title)
        parts.append(f"<section id='{e(slug)}'>")
        parts.append(f"<h2>{e(s.title)}</h2>")
        parts += [f"<p>{e(paragraph)}</p>" for paragraph in s.text.split("\n\n") if paragraph]
        if s.headers and s.rows:
            parts.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in s.headers) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in s.rows]
            parts.append("</table>")
        if s.after:
            parts.append(f"<p>{e(s.after)}</p>")
        if s.image:
            encoded = base64.b64encode(s.image.read_bytes()).decode("ascii")
            parts.append(f"<img src='data:image/png;base64,{encoded}' alt='{e(s.title)}'>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
