"""Behaviour tags on messages and their relation to success (MECoBench Section 4.3, Table 2).

The paper tags messages with keyword rules it did not release; these are coordbench's own,
versioned (`TAG_RULES_VERSION`): change a rule, bump the version, and reports say which rules
produced them. A message may carry several tags. Rule-based minds' token messages (CLAIM,
SEEN, AT, ASSIGN, ...) are tagged by the same rules.
"""

from __future__ import annotations

import re

from coordbench.core.trajectory import MessageEvent, Trajectory

TAG_RULES_VERSION = "2"  # 2: Coord-Q needs a question about teammates or the team's state
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
    # a question to teammates about where they are, what they hold or do, or who does what;
    # a question about anything else ("is this the right fridge?") is not a coordination query
    # DOOR d WAIT is the rule minds' "I'm at the door: are you ready to receive?"
    "Coord-Q": [r"\bDOOR \d+ WAIT\b",
                r"\b(where are you|where is agent \d|are you (at|in|near|ready|there|done|"
                r"holding|going|still)|do you (have|see|hold|need|want)|have you (found|got|"
                r"grabbed|placed|seen|finished)|did you|can you confirm|who (will|is|has|"
                r"should)|which (one|room|object|of us)|should i|shall i|is anyone|anyone "
                r"(have|seen|found|holding)|what are you)\b[^?\n]*\?", r"\bready\s*\?",
                r"\bplease confirm\b"],
    "Correct.": [r"\b(actually|correction|i was wrong|mistake|not there|no longer|"
                 r"instead)\b", r"^no[,.!]"],
}
TAGS = tuple(RULES)

# a message saying the whole task is finished (MECoBench's "false completion" when subgoals
# remain: "All items have been successfully placed ... The task is complete.")
COMPLETION_CLAIMS = [
    r"\b(the |our )?(whole |entire )?task (is|has been) (now )?(fully )?(complete|completed|"
    r"done|finished|accomplished)\b",
    r"\btask (complete|completed|done|finished)\b",
    r"\ball (the )?(items|objects|subgoals|targets|things) (have been|are) (now )?"
    r"(successfully )?(placed|put|delivered|stored|done|in place)\b",
    r"\bwe('re| are) (all )?(done|finished)\b",
    r"\b(mission|job) (is )?(complete|accomplished|done)\b",
]
_CLAIMS = [re.compile(p, re.I) for p in COMPLETION_CLAIMS]
# MECoBench Table 18's two indicators of a hard coordination state: a negative report (an
# agent failed to find a target where it looked) and being stuck
INDICATORS: dict[str, list[str]] = {
    "negative_report": [r"\b(could ?n[o']t|can ?n[o']t|did ?n[o']t|unable to) (find|locate|see)\b",
                        r"\b(is|are|was|were)(n't| not) (there|here|on|in|inside)\b",
                        r"\bno (sign of|\w+ (is |was )?(on|in|inside) the)\b",
                        r"\bnot found\b", r"\bMISSING \d+"],
    "stuck": [r"\b(i'?m|i am|we'?re|we are|got|seem to be) (still )?stuck\b",
              r"\b(can ?n[o']t|unable to) (reach|move|get (to|there)|proceed)\b",
              r"\b(keeps?|kept) failing\b", r"\bblocked\b"],
}
_INDICATORS = {k: re.compile("|".join(f"(?:{p})" for p in pats), re.I)
               for k, pats in INDICATORS.items()}


def indicators(text: str) -> set[str]:
    """Return which of `INDICATORS` (negative_report, stuck) the message `text` shows."""
    return {k for k, rule in _INDICATORS.items() if rule.search(text)}


def episode_indicators(traj: Trajectory) -> frozenset[str]:
    """Return the indicators any of the episode's messages shows (memory boards excluded)."""
    return traj.memo(f"indicators-v{TAG_RULES_VERSION}", lambda t: frozenset(
        k for m in t.steps(MessageEvent) if m.phase != "memory" for k in indicators(m.content)))


_NEGATED = re.compile(r"\b(not|n't|never|once|until|when|if|before|almost)\b", re.I)
# one alternation per tag: a message is searched once per tag, not once per rule
_COMPILED = {tag: re.compile("|".join(f"(?:{p})" for p in pats), re.I | re.M)
             for tag, pats in RULES.items()}


def tag_message(text: str) -> set[str]:
    """Return the behaviour tags whose rules match `text` (empty for shared-memory boards)."""
    return {tag for tag, rule in _COMPILED.items() if rule.search(text)}


def claims_completion(text: str) -> bool:
    """Return whether `text` states that the whole task is finished: a sentence matching a
    `COMPLETION_CLAIMS` rule that is not a question and has no negation or condition
    ("not", "until", "once", "if", ...) before the claim."""
    for sentence in re.split(r"(?<=[.!?;\n])\s*", text):
        if sentence.rstrip().endswith("?"):
            continue
        for rule in _CLAIMS:
            m = rule.search(sentence)
            if m and not _NEGATED.search(sentence[:m.end()]):
                return True
    return False


def episode_tags(traj: Trajectory) -> dict[str, int]:
    """Return, per tag, how many of the episode's messages carry it (memory boards excluded)."""
    return dict(traj.memo(f"tags-v{TAG_RULES_VERSION}", _count_tags))


def _count_tags(traj: Trajectory) -> dict[str, int]:
    counts = {tag: 0 for tag in TAGS}
    for m in traj.steps(MessageEvent):
        if m.phase == "memory":
            continue
        for tag in tag_message(m.content):
            counts[tag] += 1
    return counts
