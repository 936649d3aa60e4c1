"""Behaviour tags on messages and their relation to success (MECoBench Section 4.3, Table 2).

The paper tags messages with keyword rules it did not release; these are coordbench's own,
versioned (`TAG_RULES_VERSION`): change a rule, bump the version, and reports say which rules
produced them. A message may carry several tags. Rule-based minds' token messages (CLAIM,
SEEN, AT, ASSIGN, ...) are tagged by the same rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from coordbench.core.stats import mean_ci
from coordbench.core.trajectory import MessageEvent, Trajectory

TAG_RULES_VERSION = "1"
_ROOMS = r"(kitchen|bedroom|bathroom|living ?room)"
RULES: dict[str, list[str]] = {
    "Info-Plan": [r"\bi (will|'ll|am going to|plan to|intend to)\b", r"\bmy plan\b",
                  r"\bnext,? i\b", r"\bCLAIM \d+"],
    "Info-Loc": [r"\bi('m| am) (now )?(in|at|near|heading to)\b", r"\bat (the )?door\b",
                 r"\bAT \d+", r"\bSTANDING \d+", rf"\bi('m| am) in the {_ROOMS}\b"],
    "Info-Obj": [r"\b(found|see|saw|spotted|located)\b", r"\bthere (is|are) (a|an|\d+)\b",
                 r"\bSEEN \d+", r"\bHOLD \d+", r"\bis (on|in|inside) the \w+"],
    "Act-Del": [r"\b(can|could|would) you\b.*\b(grab|bring|check|put|take|open|get|fetch)\b",
                r"\bplease (grab|bring|check|put|take|open|get|fetch)\b",
                r"\bagent \d,? (please )?(grab|bring|take|put|check|fetch)\b"],
    "Task-Assign": [r"\bagent \d (should|will|takes?|handles?|searches|goes)\b",
                    r"\b(you take|i('ll)? take the|let'?s split|divide|assign)\b",
                    r"\bASSIGN \d+ (FETCH|EXPLORE|RECEIVE)"],
    "Coord-Q": [r"\b(where are you|are you (at|in|ready|there|done)|ready\?|"
                r"who (will|is)|which one|should i)\b.*\?", r"\?\s*$"],
    "Correct.": [r"\b(actually|correction|i was wrong|mistake|not there|no longer|"
                 r"instead)\b", r"^no[,.!]"],
}
TAGS = tuple(RULES)
_COMPILED = {tag: [re.compile(p, re.I | re.M) for p in pats] for tag, pats in RULES.items()}


def tag_message(text: str) -> set[str]:
    """Return the behaviour tags whose rules match `text` (empty for shared-memory boards)."""
    return {tag for tag, pats in _COMPILED.items() if any(p.search(text) for p in pats)}


def episode_tags(traj: Trajectory) -> dict[str, int]:
    """Return, per tag, how many of the episode's messages carry it (memory boards excluded)."""
    counts = {tag: 0 for tag in TAGS}
    for m in traj.steps(MessageEvent):
        if m.phase == "memory":
            continue
        for tag in tag_message(m.content):
            counts[tag] += 1
    return counts


def tag_table(trajs: Iterable[Trajectory]) -> list[dict[str, object]]:
    """Return per tag: share of episodes using it, messages per episode, and SR/CR with vs
    without it (delta = with - without; None where either side has no episode)."""
    from coordbench.metrics.household import completion_rate, success

    rows = [(episode_tags(t), success(t), completion_rate(t)) for t in trajs]
    out = []
    for tag in TAGS:
        with_ = [(s, c) for tags, s, c in rows if tags[tag] > 0]
        without = [(s, c) for tags, s, c in rows if tags[tag] == 0]

        def mean(xs, k):
            return mean_ci([x[k] for x in xs]).mean if xs else None

        sr_w, sr_o, cr_w, cr_o = mean(with_, 0), mean(without, 0), mean(with_, 1), \
            mean(without, 1)
        out.append({
            "tag": tag, "episodes_with": len(with_), "share": len(with_) / len(rows) if rows
            else 0.0, "per_episode": (sum(t[tag] for t, _, _ in rows) / len(rows)) if rows
            else 0.0, "SR_with": sr_w, "SR_without": sr_o,
            "delta_SR": None if sr_w is None or sr_o is None else sr_w - sr_o,
            "CR_with": cr_w, "CR_without": cr_o,
            "delta_CR": None if cr_w is None or cr_o is None else cr_w - cr_o,
            "rules_version": TAG_RULES_VERSION})
    return out
