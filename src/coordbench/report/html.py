"""report.html: the run report as one self-contained page (no network when it is opened).

Every table of report.md, rendered from the same markdown, and after each family's tables its
figures (`figures.py`) as inline SVG, then the "who and when" section of an attributed run,
with a contents list on the side. Nothing is loaded from elsewhere: styles are inline, plots
are SVG text, so the file can be mailed or archived.
"""

from __future__ import annotations

import html
import io
import re
from typing import Any

from markdown_it import MarkdownIt

from coordbench.core.rundir import RunDir

from .figures import Figure, for_suite

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330}
nav{position:fixed;top:0;left:0;bottom:0;width:230px;overflow:auto;background:#f4f6f9;
 border-right:1px solid #dde2ea;padding:16px 12px;font-size:13px}
nav a{display:block;color:#2b4a7e;text-decoration:none;padding:2px 0}
nav a.h3{padding-left:12px;color:#555}
main{margin-left:256px;padding:8px 28px 60px;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;border-bottom:2px solid #dde2ea;padding-bottom:4px;
 margin-top:36px}h3{font-size:15px;margin-top:24px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:12.5px;display:block;overflow-x:auto}
th,td{border:1px solid #dde2ea;padding:3px 8px;text-align:left;white-space:nowrap}
td{white-space:normal;max-width:26em;overflow-wrap:break-word}
th{background:#eef1f6}tr:nth-child(even) td{background:#fafbfc}
figure{margin:12px 0 24px}figure svg{max-width:100%;height:auto}
figcaption{font-size:12.5px;color:#444;margin-top:4px}
code{background:#eef1f6;padding:0 3px;border-radius:3px}
"""


def _svg(fig: Any) -> str:
    """Return the figure as inline SVG text (and close it)."""
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    # text stays text (not glyph paths): a third of the size, selectable, and faster; the
    # figures are laid out already (tight_layout), so no second "tight" drawing pass
    with plt.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buf, format="svg")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog and doctype: inline SVG


def _anchor(text: str, used: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
    slug, i = base, 1
    while slug in used:
        i += 1
        slug = f"{base}-{i}"
    used.add(slug)
    return slug


def _headed(body: str, toc: list[tuple[int, str, str]], used: set[str]) -> str:
    """Return `body` with an id on every h2/h3, each listed in `toc`."""
    def name(m: re.Match) -> str:
        level, inner = int(m.group(1)), m.group(2)
        slug = _anchor(re.sub(r"<[^>]+>", "", inner), used)
        toc.append((level, slug, re.sub(r"<[^>]+>", "", inner)))
        return f'<h{level} id="{slug}">{inner}</h{level}>'

    return re.sub(r"<h([23])>(.*?)</h\1>", name, body)


def _figures(figs: list[Figure]) -> str:
    return "".join(f'<figure class="plot">{_svg(f.figure)}<figcaption>'
                   f"{html.escape(f.caption)}</figcaption></figure>" for f in figs)


def markdown_renderer() -> MarkdownIt:
    """Return the markdown renderer of every coordbench page (CommonMark, tables, no raw
    HTML)."""
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def page(title: str, nav_title: str, chunks: list[tuple[str, list[Figure]]],
         head: str = "") -> str:
    """Return a self-contained HTML page: `head` markdown, then each (markdown, figures)
    chunk in a section, with every h2/h3 listed in the side contents."""
    md = markdown_renderer()
    toc: list[tuple[int, str, str]] = []
    used: set[str] = set()
    parts = [md.render(head)] if head else []
    for text, figs in chunks:
        parts.append(f'<section>{_headed(md.render(text), toc, used)}{_figures(figs)}'
                     "</section>")
    return _shell(title, nav_title, toc, "".join(parts))


def _shell(title: str, nav_title: str, toc: list[tuple[int, str, str]], body: str) -> str:
    nav = "".join(f'<a class="h{lvl}" href="#{slug}">{html.escape(text)}</a>'
                  for lvl, slug, text in toc)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
            f"<nav><strong>{html.escape(nav_title)}</strong>{nav}</nav>"
            f"<main>{body}</main></body></html>\n")


def render(run: RunDir, report: Any) -> str:
    """Return report.html's text: the report's markdown tables with each family's figures."""
    md = markdown_renderer()
    toc: list[tuple[int, str, str]] = []
    used: set[str] = set()
    chunks = [md.render(report.intro)]
    for suite, conds, section in report.parts:
        body = _headed(md.render(section.markdown), toc, used) if section.markdown else ""
        if suite == "crossplay":
            from .crossplay_report import heatmap

            figs = [heatmap(section.data["matrix"])]
        else:
            figs = for_suite(run, suite, conds, report.results, section.data)
        if figs and not body:
            slug = _anchor(section.title, used)
            toc.append((2, slug, section.title))
            body = f'<h2 id="{slug}">{html.escape(section.title)}</h2>'
        chunks.append(f'<section class="family" data-suite="{html.escape(suite)}">{body}'
                      f"{_figures(figs)}</section>")
    if getattr(report, "who_when", ""):  # an attributed run: who and when, after the families
        chunks.append(f'<section class="attribution">'
                      f"{_headed(md.render(report.who_when), toc, used)}</section>")
    title = re.sub(r"^# ", "", report.intro.splitlines()[0]) if report.intro else "report"
    return _shell(title, run.path.name, toc, "".join(chunks))
