"""Examples chosen by a study: for each behaviour tag, failure mode and construct failure
kind, one step of one saved episode that shows it (MECoBench Tables 17 and 21, CoCoBench's
case studies, Figs. 4 and 11-14).

The papers print hand-picked excerpts; coordbench picks deterministically so that a rerun
shows the same examples: the first episode in the study's plan order that shows the thing
(failed episodes first where a failure is shown), and in it the first step that earned it
(for a tag, the shortest message that carries it: short excerpts read best). Each example
names its episode (the header's `episode_id`, CONDITION/KEY), the step `t`, the agents and
the exact message or actions of that step, with the viewer command that opens it. Where no
episode shows a thing, the example says so; nothing is made up.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from coordbench.analyses.household import FAILURE_MODES
from coordbench.core.trajectory import (
    ActionRecord,
    HouseholdStepEvent,
    MessageEvent,
    ModelCallEvent,
    Trajectory,
)
from coordbench.metrics.behaviour import RULES, TAGS, claims_completion, episode_tags
from coordbench.metrics.constructs import (
    AFFORDANCE,
    FAILURE_KINDS,
    ILLEGAL,
    OCCUPANCY,
    PRECONDITION,
    SCORES,
    construct_of,
    d2_counts,
    failure_kinds,
    termination_key,
)
from coordbench.metrics.household import duplicate_grabs, handover_failure_rate

from .study import Episodes, Item

NONE_SHOWN = "no episode here shows it"
# the viewer's default port (`coordbench view`); the page reads #run=&cond=&key=&step=
VIEWER = "http://127.0.0.1:8765/"
EXCERPT_CHARS = 160  # a table cell's excerpt; the data keeps the whole text

# a row of the plan (its label) and one of its episodes
Source = tuple[str, Trajectory]


@dataclass(frozen=True)
class Line:
    """One event of an excerpt: a message (`kind` "message": its phase and text), an action
    (`kind` "action": the action record's action, args and outcome) or the episode's end
    (`kind` "end": its termination detail), at step `t`."""

    kind: str
    t: int
    agent: int | None
    text: str
    action: str | None = None
    args: dict[str, Any] | None = None
    outcome: str | None = None
    phase: str | None = None

    def as_json(self) -> dict[str, Any]:
        """Return the line as JSON (the fields that apply to its kind)."""
        out = {"kind": self.kind, "t": self.t, "agent": self.agent, "text": self.text}
        if self.kind == "message":
            out["phase"] = self.phase
        if self.kind == "action":
            out.update(action=self.action, args=self.args, outcome=self.outcome)
        return out


@dataclass
class Example:
    """One example: what it shows (`what`, within `group`, e.g. a construct), the paper's own
    example where its text gives one, and, when an episode shows it, that episode's id, the
    plan row it belongs to, how it ended, the step and agents, the excerpt's lines, the text
    span that earned a tag (`match`) and why the step counts (`why`)."""

    what: str
    paper: str = ""
    group: str = ""
    episode: str | None = None
    row: str = ""
    ended: str = ""
    t: int | None = None
    agents: list[int] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    match: str = ""
    why: str = ""

    @property
    def found(self) -> bool:
        """Return whether an episode shows it."""
        return self.episode is not None

    @property
    def condition(self) -> str:
        """Return the episode's condition (the id's part before its last "/")."""
        return (self.episode or "").rsplit("/", 1)[0]

    @property
    def key(self) -> str:
        """Return the episode's key in its condition (the id's last part)."""
        return (self.episode or "").rsplit("/", 1)[-1]

    def as_json(self, run_path: str | Path) -> dict[str, Any]:
        """Return the example as findings.json carries it, with the viewer commands (an
        example no episode shows: `found` false and a note saying so)."""
        out: dict[str, Any] = {"what": self.what, "group": self.group, "paper": self.paper,
                               "found": self.found}
        if not self.found:
            return {**out, "note": NONE_SHOWN}
        assert self.t is not None and self.episode is not None
        return {**out, "episode": self.episode, "condition": self.condition, "key": self.key,
                "row": self.row, "ended": self.ended, "t": self.t, "agents": self.agents,
                "excerpt": excerpt(self.lines, None), "match": self.match, "why": self.why,
                "events": [x.as_json() for x in self.lines],
                "view": viewer(run_path, self.episode, self.t)}


def viewer(run_path: str | Path, episode: str, t: int) -> dict[str, str]:
    """Return how to open step `t` of `episode` (CONDITION/KEY) of the run at `run_path`:
    {"export": the command writing the episode to one HTML file, "serve": the command
    serving the run, "url": the page at that step once served (the viewer's slider position
    t + 1 shows step t's actions and the messages sent before them)}."""
    cond, key = episode.rsplit("/", 1)
    run = shlex.quote(str(run_path))
    # a single run is served under its folder's name (viewer/index.py find_runs)
    name = Path(run_path).resolve().name or "run"
    fragment = urlencode({"run": name, "cond": cond, "key": key, "step": t + 1})
    return {"export": f"coordbench view {run} --episode {shlex.quote(episode)} "
                      f"--export {shlex.quote(key + '.html')}",
            "serve": f"coordbench view {run}", "url": f"{VIEWER}#{fragment}"}


# -- what a step looks like ---------------------------------------------------------------------
def action_text(a: ActionRecord) -> str:
    """Return an action record as the viewer's timeline writes it: action(args) [class] →
    outcome, then the engine's detail."""
    args = ", ".join(f"{k}={v}" for k, v in a.args.items())
    return (f"{a.action}({args})" + (f" [{a.obj_class}]" if a.obj_class else "")
            + f" → {a.outcome}" + (f": {a.detail}" if a.detail else ""))


def _action(t: int, a: ActionRecord) -> Line:
    return Line("action", t, a.agent, action_text(a), a.action, dict(a.args), a.outcome)


def _message(m: MessageEvent) -> Line:
    return Line("message", m.t, m.sender, m.content, phase=m.phase)


def excerpt(lines: Sequence[Line], limit: int | None = EXCERPT_CHARS) -> str:
    """Return the excerpt's lines as one text ("agent i: ..." each, joined by " · "), each
    line cut to `limit` characters (None: whole)."""
    parts = []
    for x in lines:
        text = x.text if limit is None or len(x.text) <= limit else x.text[:limit - 1] + "…"
        parts.append((f"agent {x.agent}: " if x.agent is not None else "") + text)
    return " · ".join(parts)


def _steps(traj: Trajectory) -> list[HouseholdStepEvent]:
    return traj.steps(HouseholdStepEvent)


def _ended(traj: Trajectory) -> str:
    end = traj.end
    if end is None:
        return "incomplete"
    return "success" if end.success else f"failed ({end.termination})"


def _failed(traj: Trajectory) -> bool:
    return not (traj.end is not None and traj.end.success)


def _example(what: str, paper: str, row: str, traj: Trajectory, lines: list[Line],
             why: str, group: str = "", match: str = "") -> Example:
    return Example(what, paper, group, traj.header.episode_id, row, _ended(traj), lines[0].t,
                   sorted({x.agent for x in lines if x.agent is not None}), lines, match, why)


def _first(sources: Iterable[Source], show: Callable[[Trajectory], Any],
           failed_first: bool = False) -> tuple[str, Trajectory, Any] | None:
    """Return (row, episode, what `show` found) of the first source where `show` finds
    something (failed episodes first with `failed_first`, each group in plan order)."""
    ordered = list(sources)
    if failed_first:  # a stable sort: plan order within each group
        ordered.sort(key=lambda s: not _failed(s[1]))
    for row, traj in ordered:
        found = show(traj)
        if found:
            return row, traj, found
    return None


def study_sources(ep: Episodes, keys: Iterable[Any], label: Callable[[Any], str] = str
                  ) -> list[Source]:
    """Return the episodes of `keys` in that order, each with its row's label."""
    return [(label(k), t) for k in keys for t in ep(k)]


def as_sources(items: Iterable[Source | Trajectory]) -> list[Source]:
    """Return `items` (trajectories, or (label, trajectory) pairs) as sources."""
    return [x if isinstance(x, tuple) else ("", x) for x in items]


# -- MECoBench Table 17: behaviour tags -------------------------------------------------------
# the paper's example of each tag (Table 17, under broadcast), shortened
TABLE17 = {
    "Info-Plan": "“I will grab the two puddings and check the fridge for the wine.”",
    "Info-Loc": "“I am in the bathroom and will head to the kitchen to look for the pudding "
                "and cupcake.”",
    "Info-Obj": "“I see the cupcake on the desk. I will grab it and then head to the living "
                "room.”",
    "Act-Del": "“Please go to the kitchen to grab the second apple, and then we can meet at "
               "the coffee table.”",
    "Task-Assign": "“I’ll handle the kitchen and the bathroom.”",
    "Coord-Q": "“I’m at door 287 holding the cupcake. Are you at door 287 and ready to "
               "receive? Please confirm.”",
    "Correct.": "“I accidentally grabbed a waterglass instead of the wineglass. I will put it "
                "back and then get the wineglass.”",
}
# each tag's rules one by one, to show which span earned it (metrics/behaviour.py's flags)
_RULES = {tag: [re.compile(p, re.I | re.M) for p in pats] for tag, pats in RULES.items()}


def tag_span(tag: str, text: str) -> str:
    """Return the first span of `text` a rule of `tag` matches ("" if none does)."""
    spans = [m for rule in _RULES[tag] if (m := rule.search(text))]
    # the earliest match, the longest of those: "ASSIGN 0 FETCH" rather than "ASSIGN"
    return min(spans, key=lambda m: (m.start(), -len(m.group(0)))).group(0) if spans else ""


def _tagged(tag: str) -> Callable[[Trajectory], MessageEvent | None]:
    def show(traj: Trajectory) -> MessageEvent | None:
        if not episode_tags(traj)[tag]:  # memoized per episode: most are skipped here
            return None
        hits = [m for m in traj.steps(MessageEvent) if m.phase != "memory" and tag_span(tag,
                                                                                       m.content)]
        # the shortest message that carries the tag reads best; ties: the earliest
        return min(hits, key=lambda m: (len(m.content), m.t)) if hits else None
    return show


def behaviour_examples(sources: Iterable[Source]) -> list[Example]:
    """Return one example per behaviour tag (`metrics.behaviour.TAGS`): the first episode of
    `sources` with a message carrying it, and its shortest such message (shared-memory
    boards are not messages); an example with no episode where none has one."""
    sources = list(sources)
    out = []
    for tag in TAGS:
        hit = _first(sources, _tagged(tag))
        if hit is None:
            out.append(Example(tag, TABLE17.get(tag, "")))
            continue
        row, traj, m = hit
        span = tag_span(tag, m.content)
        out.append(_example(tag, TABLE17.get(tag, ""), row, traj, [_message(m)],
                            f"the tag rule matches “{span}”", match=span))
    return out


# -- MECoBench Table 21: failure modes ---------------------------------------------------------
TABLE21 = {
    "grab_conflict": "Duplicate grab: Agent 1 “I found the wine on the coffee table. I will "
                     "grab it …”, Agent 4 “I am grabbing the wine …” ⇒ both execute [grab] "
                     "<wine>.",
    "hallucinated_completion": "False completion: “All items have been successfully placed on "
                               "the bathroom counter. The task is complete.” ⇒ all agents "
                               "[wait] until the end.",
    "object_misidentification": "Agent 3 “… will now grab the wineglass …” executes [grab] "
                                "<dishbowl> (misidentifying dishbowl as wineglass).",
    "handover_failure": "(not in Table 21: coordbench's, sequential tasks; the paper's HFR)",
}


def _grab_conflict(traj: Trajectory) -> tuple[list[Line], str] | None:
    """Return the first duplicate grab (`metrics.household.duplicate_grabs`): a grab of an
    object a teammate holds, or same-step grabs of one object, as its actions."""
    if not duplicate_grabs(traj):
        return None
    for e in _steps(traj):
        for a in e.actions:
            if a.action == "grab" and a.outcome == "held_by_other":
                return [_action(e.t, a)], "a grab of an object a teammate holds"
        for c in e.conflicts:
            grabs = [a for a in e.actions if a.action == "grab" and a.args.get("obj") == c.target
                     and a.agent in c.agents]
            if grabs:
                return ([_action(e.t, a) for a in grabs],
                        f"agents {', '.join(map(str, c.agents))} grab object {c.target} in "
                        "the same step")
    return None


def _false_completion(traj: Trajectory) -> tuple[list[Line], str] | None:
    """Return the first false completion (`metrics.household.hallucinated_completion`'s
    rule): a `done` with subgoals left after its step, or a message claiming the task done
    while the completion before its step was below 1."""
    if not FAILURE_MODES["hallucinated_completion"](traj):
        return None
    steps = _steps(traj)
    before = {e.t + 1: e.completion for e in steps}
    done = next(((e, a) for e in steps if e.completion < 1.0 for a in e.actions
                 if a.action == "done"), None)
    said = next((m for m in traj.steps(MessageEvent) if m.phase != "memory"
                 and before.get(m.t, 0.0) < 1.0 and claims_completion(m.content)), None)
    if said is not None and (done is None or said.t <= done[0].t):
        return [_message(said)], (f"the task is claimed done at completion "
                                  f"{before.get(said.t, 0.0):.0%}")
    if done is not None:
        e, a = done
        return [_action(e.t, a)], f"`done` with completion {e.completion:.0%} after the step"
    return None


def _misidentification(traj: Trajectory) -> tuple[list[Line], str] | None:
    """Return the first successful grab of an object whose class no subgoal asks for
    (`metrics.household.wrong_class_grabs`)."""
    goal = set(traj.header.params.get("goal_classes", []))
    for e in _steps(traj):
        for a in e.actions:
            if (a.action == "grab" and a.outcome == "ok" and a.obj_class is not None
                    and a.obj_class not in goal):
                return [_action(e.t, a)], (f"{a.obj_class} is not a goal class (goal: "
                                           f"{', '.join(sorted(goal))})")
    return None


def _handover_failure(traj: Trajectory) -> tuple[list[Line], str] | None:
    """Return the first handover attempt that failed (`handover_failure_rate`'s count)."""
    if not handover_failure_rate(traj):
        return None
    for e in _steps(traj):
        for a in e.actions:
            if a.action == "handover" and a.outcome != "ok":
                return [_action(e.t, a)], f"the handover ends {a.outcome}"
    return None


# how each failure mode's step is found, in Table 22's order (analyses.household
# FAILURE_MODES), then coordbench's handover failures
MODE_STEPS: dict[str, Callable[[Trajectory], tuple[list[Line], str] | None]] = {
    "hallucinated_completion": _false_completion,
    "grab_conflict": _grab_conflict,
    "object_misidentification": _misidentification,
    "handover_failure": _handover_failure,
}


def failure_mode_examples(sources: Iterable[Source]) -> list[Example]:
    """Return one example per household failure mode (Table 22's modes and handover
    failures): the first failed episode of `sources` showing it (else the first episode),
    at the first step that shows it; an example with no episode where none does."""
    sources = list(sources)
    out = []
    for mode, find in MODE_STEPS.items():
        hit = _first(sources, find, failed_first=True)
        if hit is None:
            out.append(Example(mode, TABLE21.get(mode, "")))
            continue
        row, traj, (lines, why) = hit
        out.append(_example(mode, TABLE21.get(mode, ""), row, traj, lines, why))
    return out


# -- CoCoBench: construct failure kinds and the case studies -------------------------------------
CONSTRUCTS = tuple(SCORES)
# what the paper says of the kinds (Table 5 and Fig. 9a give shares, no example text)
KIND_PAPER = ("Table 5 counts the failure kinds without examples: dependency violations in "
              "11-95% of failed episodes, occupancy conflicts 1-7%, affordance failures 0-3%, "
              "illegal skills 0%; Fig. 9a: protocol failures end 1.0% of episodes for "
              "proprietary models, 17.5% for open ones.")
# the paper's successful case study of each construct (Appendix E)
CASE_PAPER = {
    "D1": "Fig. 11: in Store Groceries the agents divide the independent subtasks and avoid "
          "duplicate work.",
    "D2": "Fig. 12: in Stock Cabinet the final Close comes only after all placements.",
    "D3": "Fig. 13: in Prepare Food the agents take turns with the single Knife.",
    "D4": "Fig. 14: in Cross-Zone Handoff producers and consumers relay objects through a "
          "transfer point.",
}
_OUTCOMES = {"dependency": PRECONDITION, "occupancy": OCCUPANCY, "affordance": AFFORDANCE,
             "illegal_skill": ILLEGAL}


def _first_outcome(traj: Trajectory, outcomes: frozenset[str]) -> tuple[int, int] | None:
    """Return (step index, action index) of the first action with one of `outcomes`."""
    for i, e in enumerate(_steps(traj)):
        for j, a in enumerate(e.actions):
            if a.outcome in outcomes:
                return i, j
    return None


def _first_order_violation(traj: Trajectory) -> tuple[int, int] | None:
    """Return (step index, action index) of the first D2 ordering violation (`d2_counts`):
    the shortest prefix of the episode's actions whose count of violations is above 0 (the
    metric's own rule, applied to prefixes, rather than a second copy of it)."""
    if construct_of(traj) != "D2" or not d2_counts(traj)[1]:
        return None
    steps = _steps(traj)

    def violated(i: int, j: int) -> bool:
        last = steps[i].model_copy(update={"actions": steps[i].actions[:j + 1]})
        return d2_counts(Trajectory(header=traj.header, events=[*steps[:i], last]))[1] > 0

    i = next(i for i in range(len(steps)) if violated(i, len(steps[i].actions) - 1))
    return i, next(j for j in range(len(steps[i].actions)) if violated(i, j))


def _kind_step(kind: str) -> Callable[[Trajectory], tuple[list[Line], str] | None]:
    def find(traj: Trajectory) -> tuple[list[Line], str] | None:
        if not failure_kinds(traj)[kind]:
            return None
        at = [p for p in (_first_outcome(traj, _OUTCOMES[kind]),
                          _first_order_violation(traj) if kind == "dependency" else None)
              if p is not None]
        if not at:
            return None
        i, j = min(at)
        e = _steps(traj)[i]
        a = e.actions[j]
        why = (f"outcome {a.outcome}" if a.outcome in _OUTCOMES[kind]
               else "out of the order the D2 goal containers require")
        return [_action(e.t, a)], why
    return find


def _protocol_failure(traj: Trajectory) -> tuple[list[Line], str] | None:
    """Return the step that ended an episode in a protocol failure: its action with that
    outcome, else its failed parse of a model reply, else the episode's end."""
    if termination_key(traj) != "protocol_failure":
        return None
    for e in reversed(_steps(traj)):
        for a in e.actions:
            if a.outcome == "protocol_failure":
                return [_action(e.t, a)], "the decision could not be used; the episode ends"
    for c in reversed(traj.steps(ModelCallEvent)):
        if c.parse_status == "failed":
            return ([Line("call", c.t, c.agent, c.reply or (c.parse_error or ""))],
                    f"the reply could not be parsed: {c.parse_error or 'no action'}")
    end = traj.end
    if end is None:
        return None
    return [Line("end", end.t, None, end.detail or end.termination)], "the episode's end"


def _success_step(traj: Trajectory) -> tuple[list[Line], str] | None:
    """Return the last step of a successful team episode: the actions that completed it."""
    steps = _steps(traj)
    if _failed(traj) or not steps or not steps[-1].actions:
        return None
    e = steps[-1]
    return [_action(e.t, a) for a in e.actions], "the step that completes the task"


def construct_examples(sources: Iterable[Source]) -> list[Example]:
    """Return, per construct (D1-D4): a successful episode's last step (as the paper's case
    studies, Figs. 11-14), and for each failure kind (dependency, occupancy, affordance,
    illegal skill: `metrics.constructs.FAILURE_KINDS`) and protocol failure the first failed
    episode showing it (else the first episode) at its first such step; an example with no
    episode where none of the construct's episodes shows one."""
    sources = list(sources)
    finders = {"success": _success_step,
               **{k: _kind_step(k) for k in FAILURE_KINDS},
               "protocol_failure": _protocol_failure}
    out = []
    for construct in CONSTRUCTS:
        mine = [s for s in sources if construct_of(s[1]) == construct]
        for what, find in finders.items():
            # the paper's text has an example of a success only (its case studies)
            paper = CASE_PAPER[construct] if what == "success" else ""
            hit = _first(mine, find, failed_first=what != "success")
            if hit is None:
                out.append(Example(what, paper, construct))
                continue
            row, traj, (lines, why) = hit
            out.append(_example(what, paper, row, traj, lines, why, construct))
    return out


# -- the items -----------------------------------------------------------------------------------
def md_cell(text: str) -> str:
    """Return `text` safe in a markdown table cell: `|`, the marks that start emphasis, code,
    links and autolinks escaped (an underscore only at a word's edge: inside a word it is
    plain), newlines as " ⏎ "."""
    text = re.sub(r"([\\`*\[\]<|]|(?<!\w)_|_(?!\w))", r"\\\1", text)
    return re.sub(r"\s*\n\s*", " ⏎ ", text.strip())


def examples_markdown(examples: Sequence[Example], run_path: str | Path,
                      group: str = "") -> str:
    """Return the examples as a markdown table (what, the paper's example, episode, step,
    agents, excerpt; `group`: a column for the examples' groups, e.g. "construct"), then the
    episodes it names, each with the viewer commands that open it at those steps."""
    names: dict[str, str] = {}
    steps: dict[str, list[int]] = {}
    head = ([group] if group else []) + ["what", "paper's example", "episode", "step",
                                         "agents", "excerpt"]
    rows = []
    for x in examples:
        lead = [x.group] if group else []
        if not x.found:
            rows.append(lead + [x.what, md_cell(x.paper), NONE_SHOWN, "", "", ""])
            continue
        assert x.episode is not None and x.t is not None
        name = names.setdefault(x.episode, f"E{len(names) + 1}")
        steps.setdefault(x.episode, [])
        if x.t not in steps[x.episode]:
            steps[x.episode].append(x.t)
        text = md_cell(excerpt(x.lines))
        if x.match:  # the span that earned the tag, as the paper highlights it
            span = md_cell(x.match)
            text = text.replace(span, f"**{span}**", 1)
        rows.append(lead + [x.what, md_cell(x.paper), name, str(x.t),
                            ", ".join(map(str, x.agents)), text])
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    if not names:
        return "\n".join(out) + "\n"
    ended = {x.episode: (x.row, x.ended) for x in examples if x.found}
    out += ["", "Episodes (serve the run with `coordbench view "
            f"{shlex.quote(str(run_path))}` and open the address, which goes to the step; "
            "or export one episode to a single HTML file):", ""]
    for episode, name in names.items():
        row, end = ended[episode]
        urls = ", ".join(f"step {t}: `{viewer(run_path, episode, t)['url']}`"
                         for t in steps[episode])
        out.append(f"- {name}: `{episode}` ({md_cell(row)}{', ' if row else ''}{end}); "
                   f"`{viewer(run_path, episode, steps[episode][0])['export']}`; {urls}")
    return "\n".join(out) + "\n"


def examples_item(ref: str, title: str, paper: str, examples: Sequence[Example],
                  run_path: str | Path, group: str = "", note: str = "") -> Item:
    """Return an item showing `examples` (no findings: examples are not claims); its data
    {"run": the run's path, "examples": [each example's JSON]}."""
    return Item(ref, title, paper, examples_markdown(examples, run_path, group), note=note,
                data={"run": str(run_path),
                      "examples": [x.as_json(run_path) for x in examples]})


CHOICE = ("Each example is the first episode in the study's plan order that shows it{first}, "
          "at the first step that does{tag}. Step t is a team step: messages at t are sent "
          "before that step's actions.")


def _meco_label(k: Any) -> str:
    text = f"{k.structure}, {k.team} agent{'s' if k.team != 1 else ''}, {k.protocol}, " \
           f"prior {k.prior}"
    return text + (f", led by {k.leader}" if getattr(k, "leader", None) else "")


def _meco_sources(ep: Episodes) -> list[Source]:
    """Return the team rows' episodes (not the oracle's), broadcast rows first as in the
    paper's Tables 17 and 22, each group in plan order."""
    team = [k for k in ep.keys if getattr(k, "who", "team") == "team"]
    team.sort(key=lambda k: getattr(k, "protocol", "") != "broadcast")
    return study_sources(ep, team, _meco_label)


def mecobench_items(ep: Episodes) -> list[Item]:
    """Return MECoBench's example items: Table 17 (a message for each behaviour tag) and
    Table 21 (a step for each failure mode), chosen from the team rows' episodes."""
    sources = _meco_sources(ep)
    return [
        examples_item(
            "Table 17", "Examples of collaborative behaviours",
            "Representative messages of each behaviour under broadcast, the span that earns "
            "the tag highlighted (quoted in the table).",
            behaviour_examples(sources), ep.run.path,
            note=CHOICE.format(first=" (broadcast rows first, as the paper's)",
                               tag="; for a tag, the shortest message carrying it, its "
                                   "matching span in bold")
            + " Rule minds talk in tokens (CLAIM, SEEN, AT, DOOR d WAIT) that the tag rules "
              "read; a tag no episode shows is said so."),
        examples_item(
            "Table 21", "Examples of failure modes",
            "Representative trace excerpts of each failure mode (quoted in the table).",
            failure_mode_examples(sources), ep.run.path,
            note=CHOICE.format(first=" (failed episodes first, broadcast rows first)",
                               tag="") + " The modes are Table 22's (metrics/household.py); "
                                         "handover failures are coordbench's addition.")]


def _coco_label(k: Any) -> str:
    text = f"{k.subset}, {k.planner} planner, {k.observation}"
    if getattr(k, "construct", None):
        text += f", {k.construct} only"
    if getattr(k, "capacity", None):
        text += f", buffers of capacity {k.capacity}"
    return text


def cocobench_item(ep: Episodes) -> Item:
    """Return CoCoBench's example item (Figs. 4 and 11-14): per construct, a successful
    episode's completing step and a step of each failure kind, from the planner rows'
    episodes (the main evaluation first)."""
    team = [k for k in ep.keys if getattr(k, "who", "team") == "team"]
    return examples_item(
        "Figs. 4, 11-14", "Examples: case studies and failure kinds",
        "Fig. 4 shows qualitative examples across the four constructs and Appendix E one "
        "successful trajectory per construct (Figs. 11-14, quoted in the table). "
        + KIND_PAPER,
        construct_examples(study_sources(ep, team, _coco_label)), ep.run.path, "construct",
        note=CHOICE.format(first=" (failed episodes first for a failure kind)", tag="")
        + " A success is shown by the step that completes it; a kind is the action outcome "
          "metrics/constructs.py counts (a D2 ordering violation: the action that breaks "
          "the order), a protocol failure the decision that ended the episode.")
