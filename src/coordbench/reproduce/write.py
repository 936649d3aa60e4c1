"""Write a Study: reproduce.md, reproduce.html (self-contained), figures/*.png, findings.json."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from coordbench.core.atomic import write_atomic

from .study import Study, show


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "figure"


def findings_table(study: Study) -> str:
    """Return the markdown table of every finding: claim, paper, coordbench, verdict."""
    lines = ["| id | paper | claim | paper's value | coordbench | verdict |",
             "|---|---|---|---|---|---|"]
    for f in study.findings:
        lines.append(f"| {f.id} | {f.paper_ref} | {f.claim} | {_cell(f.paper_value)} | "
                     f"{_cell(f.coordbench_value)} | **{f.verdict}**: {_text(f.reason)}"
                     + (f" ({_text(f.note)})" if f.note and f.note != f.reason else "")
                     + " |")
    return "\n".join(lines) + "\n"


def _text(text: str) -> str:
    """Return prose safe in a markdown table cell."""
    return text.replace("|", "/").replace("\n", " ")


def _cell(value: Any) -> str:
    # estimates, differences and slopes print as `show` prints them; other dicts and lists
    # are spelled out entry by entry
    if isinstance(value, dict) and not value.keys() & {"mean", "delta", "slope"}:
        return ", ".join(f"{k} {_cell(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_cell(v) for v in value)
    return show(value).replace("|", "/")


def item_markdown(item) -> str:
    """Return one item's markdown: heading, the paper's numbers, ours, its findings."""
    parts = [f"## {item.ref}: {item.title}", "", "**The paper reports.** " + item.paper, "",
             "**coordbench measures.**", "", item.ours]
    if item.note:
        parts += ["", f"*Note.* {item.note}"]
    for f in item.findings:
        parts += ["", f"- **{f.id}** {f.claim} Paper: {_cell(f.paper_value)}. coordbench: "
                  f"{_cell(f.coordbench_value)}. **{f.verdict}**: {f.reason}"
                  + (f" ({f.note})" if f.note and f.note != f.reason else "") + "."]
    return "\n".join(parts) + "\n"


def write_study(study: Study, out: Path, html: bool = True, png: bool = True) -> dict[str, Path]:
    """Write the study's files into `out`; return {kind: path} of what was written."""
    out.mkdir(parents=True, exist_ok=True)
    head = (f"# Reproducing {study.title}\n\n{study.preamble}\n\n## Findings\n\n"
            + findings_table(study))
    body = [item_markdown(i) for i in study.items]
    written: dict[str, Path] = {}
    figs_dir = out / "figures"
    if png and any(i.figures for i in study.items):
        figs_dir.mkdir(exist_ok=True)
        for k, item in enumerate(study.items):
            for j, fig in enumerate(item.figures):
                path = figs_dir / f"{study.paper}-{k:02d}-{_slug(item.ref)}-{j}.png"
                fig.figure.savefig(path, dpi=110)
                body[k] += f"\n![{fig.caption}](figures/{path.name})\n"
    md_path = out / "reproduce.md"
    write_atomic(md_path, head + "\n" + "\n".join(body))
    written["markdown"] = md_path
    if html:
        from coordbench.report.html import page

        html_path = out / "reproduce.html"
        # the page inlines SVG; the PNG links of the markdown stay out of it
        chunks = [(item_markdown(i), i.figures) for i in study.items]
        write_atomic(html_path, page(f"Reproducing {study.title}", out.name, chunks,
                                          head=head))
        written["html"] = html_path
    else:
        import matplotlib.pyplot as plt

        for item in study.items:
            for fig in item.figures:
                plt.close(fig.figure)
    data = {**study.as_json(), "items": [{"ref": i.ref, "title": i.title, "data": i.data}
                                         for i in study.items]}
    json_path = out / "findings.json"
    write_atomic(json_path, json.dumps(data, indent=1, default=str) + "\n")
    written["findings"] = json_path
    return written
