"""Checks every report.html must pass, shared by the run tests."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

MAX_BYTES = 5_000_000  # report.html of the default run stays under 5 MB


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def check_report_html(path: Path, suites: set[str]) -> str:
    """Assert report.html is one self-contained page holding every table of report.md and
    figures for each of `suites`; return its text."""
    text = path.read_text(encoding="utf-8")
    assert len(text.encode()) < MAX_BYTES
    parser = _Tags()
    parser.feed(text)
    for tag, attrs in parser.tags:  # nothing is fetched when the page is opened
        for key in ("src", "href"):
            value = attrs.get(key) or ""
            assert not re.match(r"(https?:)?//", value), (tag, value)
        assert tag not in ("script", "link", "iframe", "img"), tag
    md = (path.parent / "report.md").read_text(encoding="utf-8")
    md_tables = len(re.findall(r"^\|(?:---\|)+", md, flags=re.M))
    assert text.count("<table>") == md_tables > 0
    for suite in suites:
        section = re.search(rf'<section class="family" data-suite="{suite}">(.*?)</section>',
                            text, flags=re.S)
        assert section, suite
        assert "<svg" in section.group(1), f"{suite} has no figure"
    # every heading is linked from the contents list
    ids = re.findall(r'<h[23] id="([^"]+)"', text)
    assert ids and all(f'href="#{i}"' in text for i in ids)
    return text
