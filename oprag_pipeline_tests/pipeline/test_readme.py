"""The README and docs/ point the way: every `oprag` command they show exists with the options they give it, and
every relative link (and its #anchor) leads to a file that is there."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from oprag_pipeline.cli import main
from oprag_pipeline_tests.conftest import CHECKOUT

README = CHECKOUT / "README.md"
DOCUMENTS = [README, *sorted((CHECKOUT / "docs").rglob("*.md"))]

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_SPAN = re.compile(r"`([^`\n]+)`")
_COMMAND = re.compile(r"(?:^|[\s(/])oprag\s+([a-z][a-z0-9-]*)")
_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")


def code_of(text: str) -> list[str]:
    """The README's code: fenced blocks (continuation lines joined) and inline code spans."""
    blocks = [block.replace("\\\n", " ") for block in _FENCE.findall(text)]
    prose = _FENCE.sub("", text)
    return [*blocks, *_SPAN.findall(prose)]


def commands_named(text: str) -> set[str]:
    return {match.group(1) for code in code_of(text) for match in _COMMAND.finditer(code)}


def command_lines(text: str) -> list[list[str]]:
    """The `oprag …` command lines of the fenced blocks, as argument lists (comments and prompts left out)."""
    lines = []
    for block in _FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            start = re.search(r"(?:^|\s|/)oprag\s", line)
            if start is None:
                continue
            try:
                words = shlex.split(line[start.start() :], comments=True)
            except ValueError:
                continue
            lines.append(words[1:])
    return lines


def test_the_readme_names_the_main_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert "./scripts/main.sh" in text and "./scripts/test.sh" in text
    assert {"import", "run", "ask", "serve", "report"} <= commands_named(text)
    assert len(text.splitlines()) <= 200, "the README is read in five minutes: move detail into docs/"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(CHECKOUT)))
def test_every_oprag_command_shown_exists(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    missing = sorted(name for name in commands_named(text) if name not in main.commands)
    assert not missing, f"{document.name} names oprag subcommands that do not exist: {missing}"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(CHECKOUT)))
def test_every_option_shown_exists(document: Path) -> None:
    for words in command_lines(document.read_text(encoding="utf-8")):
        if not words or words[0].startswith("-"):
            continue
        command = main.commands.get(words[0])
        assert command is not None, words
        known = {name for param in command.params if isinstance(param, click.Option) for name in param.opts}
        known |= {name for param in command.params if isinstance(param, click.Option) for name in param.secondary_opts}
        known |= {"-h", "--help"}
        unknown = [w.split("=")[0] for w in words[1:] if w.startswith("-") and w.split("=")[0] not in known]
        assert not unknown, f"{document.name}: `oprag {' '.join(words)}` uses options {words[0]} lacks: {unknown}"


def _anchors(path: Path) -> set[str]:
    """GitHub's ids of a Markdown file's headings: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", _FENCE.sub("", path.read_text(encoding="utf-8")), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(CHECKOUT)))
def test_every_relative_link_resolves(document: Path) -> None:
    broken = []
    for target in _LINK.findall(_FENCE.sub("", document.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        path = (document.parent / path_part).resolve() if path_part else document
        if not path.exists() or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
            broken.append(target)
    assert not broken, f"{document.relative_to(CHECKOUT)}: links that lead nowhere: {broken}"


def test_the_link_checker_sees_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](page.md#title) [gone](nowhere.md) [anchor](page.md#missing)\n")
    targets = _LINK.findall(page.read_text())
    assert targets == ["page.md#title", "nowhere.md", "page.md#missing"]
    assert "title" in _anchors(page) and "missing" not in _anchors(page)
    assert commands_named("run `oprag nosuch --x` or\n```bash\noprag run --domain d  # comment\n```\n") == {
        "nosuch",
        "run",
    }
