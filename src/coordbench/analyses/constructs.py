"""Analyses of construct trajectories (after CoCoBench's Figs. 5-9 and Table 5).

Pure functions of lists of construct trajectories (`core.trajectory.Trajectory`, e.g.
`RunDir.open(path).load_episodes(condition)`); each returns plain JSON-serialisable dicts
(floats, ints, None, strings; NaN never appears, an undefined number is None).

Statistics and dict forms: `analyses.common`. Groups compared (planners, observations) are
treated as independent samples of episodes, even where they played the same instances.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from coordbench.core.trajectory import Trajectory
from coordbench.metrics.constructs import (
    FAILURE_KINDS,
    SCORES,
    TERMINATIONS,
    construct_of,
    construct_score,
    correlation_matrix,
    cross_scores,
    failure_kinds,
    legal,
    termination_key,
)

from .common import (
    Json,
    mean_diff,
    mean_score,
    num,
    ols_slope,
    proportion_diff,
    rate,
    success,
    team_size,
)

CONSTRUCTS = tuple(SCORES)
TEAM_SIZES = (2, 3, 4)
ALL = "all"


# -- building blocks ---------------------------------------------------------------------------
def _by_construct(trajs: Sequence[Trajectory]) -> dict[str, list[Trajectory]]:
    """Return {"all": trajs, construct: its trajectories} for the constructs present."""
    out: dict[str, list[Trajectory]] = {ALL: list(trajs)}
    for c in CONSTRUCTS:
        mine = [t for t in trajs if construct_of(t) == c]
        if mine:
            out[c] = mine
    return out


def _sr_cs(trajs: Sequence[Trajectory]) -> tuple[list[float], list[float]]:
    sr = [float(success(t)) for t in trajs]
    cs = [v for v in (construct_score(t) for t in trajs) if v is not None]
    return sr, cs


def _levels(trajs: Sequence[Trajectory]) -> Json:
    sr, cs = _sr_cs(trajs)
    return {"SR": rate(int(sum(sr)), len(sr)), "CS": mean_score(cs), "n": len(trajs)}


def _compare(a: Sequence[Trajectory], b: Sequence[Trajectory]) -> Json:
    sr_a, cs_a = _sr_cs(a)
    sr_b, cs_b = _sr_cs(b)
    return {"SR": proportion_diff(int(sum(sr_a)), len(sr_a), int(sum(sr_b)), len(sr_b)),
            "CS": mean_diff(cs_a, cs_b)}


# -- the analyses ------------------------------------------------------------------------------
def score_correlations(trajs: Sequence[Trajectory]) -> Json:
    """Return the construct-score correlation matrix over trajectories (paper Fig. 5).

    All four scores are cross-applied to every trajectory (`metrics.constructs.cross_scores`);
    each pair's Pearson r is over the trajectories where both scores are defined.
    Returns {"r": {a: {b: r or None}}, "n": {a: {b: pairs}}, "trajectories": count}, r None
    with fewer than 3 pairs or no variance in either score.
    """
    rows = [cross_scores(t) for t in trajs]
    r = correlation_matrix(rows, CONSTRUCTS)
    n = {a: {b: sum(row[a] is not None and row[b] is not None for row in rows)
             for b in CONSTRUCTS} for a in CONSTRUCTS}
    return {"r": {a: {b: num(v) for b, v in row.items()} for a, row in r.items()}, "n": n,
            "trajectories": len(rows)}


def termination_shares(trajs: Sequence[Trajectory]) -> Json:
    """Return {success, normal_stop, budget_exhausted, protocol_failure: rate}: the share of
    episodes ending each way (`metrics.constructs.termination_key`), each with its Wilson
    interval over all n episodes; the four means sum to 1 (all None when there is no
    episode)."""
    keys = [termination_key(t) for t in trajs]
    return {k: rate(keys.count(k), len(keys)) for k in TERMINATIONS}


def failure_shares(trajs: Sequence[Trajectory]) -> Json:
    """Return {dependency, occupancy, affordance, illegal_skill: rate}: among the failed
    episodes (not successful), the share exhibiting at least one dependency violation,
    occupancy conflict, affordance failure or illegal-skill use (paper Table 5), each with
    its Wilson interval over the failed episodes; means None when no episode failed."""
    failed = [failure_kinds(t) for t in trajs if not success(t)]
    return {k: rate(sum(f[k] for f in failed), len(failed)) for k in FAILURE_KINDS}


def legality_gap(trajs: Sequence[Trajectory]) -> Json:
    """Return how success and legal coordination diverge (paper Fig. 9b).

    {"success_rate": over all episodes, "legal_rate": legal plans (no illegal skill, no
    precondition violation) over the episodes with an action, "legal_success_rate":
    successful and legal over all episodes, "successful_not_legal": the share of successful
    episodes that were not legal, "n": episodes}; each a rate with its Wilson interval.
    """
    ok = [success(t) for t in trajs]
    lg = [legal(t) for t in trajs]
    with_action = [v for v in lg if v is not None]
    wins = [v for s, v in zip(ok, lg, strict=True) if s]
    return {"success_rate": rate(sum(ok), len(ok)),
            "legal_rate": rate(sum(bool(v) for v in with_action), len(with_action)),
            "legal_success_rate": rate(sum(s and v is not False
                                           for s, v in zip(ok, lg, strict=True)), len(ok)),
            "successful_not_legal": rate(sum(v is False for v in wins), len(wins)),
            "n": len(trajs)}


def architecture_deltas(by_planner: dict[str, list[Trajectory]],
                        reference: str = "central") -> Json:
    """Return SR and CS per planner and their differences from the central planner (Fig. 6).

    `by_planner` maps a planner mode (central, decentralized, decentralized_comm) to its
    trajectories. Returns {construct: {"levels": {planner: {"SR": rate, "CS": mean score,
    "n"}}, "deltas": {planner: {"SR": Newcombe difference, "CS": Welch difference}}}} for
    "all" and each construct present, every planner other than `reference` compared with it
    (planner minus central). ValueError when `reference` is missing.
    """
    if reference not in by_planner:
        raise ValueError(f"architecture_deltas needs the {reference!r} planner's trajectories")
    groups = {p: _by_construct(ts) for p, ts in by_planner.items()}
    out: Json = {}
    for c in (ALL, *CONSTRUCTS):
        ref = groups[reference].get(c, [])
        if not ref and not any(c in g for g in groups.values()):
            continue
        out[c] = {"levels": {p: _levels(g.get(c, [])) for p, g in groups.items()},
                  "deltas": {p: _compare(g.get(c, []), ref) for p, g in groups.items()
                             if p != reference}}
    return out


def observation_deltas(image: Sequence[Trajectory], blind: Sequence[Trajectory]) -> Json:
    """Return SR and CS with image vs blind (text-only) observations and image minus blind
    (Fig. 7): {construct: {"image": {"SR", "CS", "n"}, "blind": {...}, "delta": {"SR":
    Newcombe difference, "CS": Welch difference}}} for "all" and each construct present."""
    gi, gb = _by_construct(image), _by_construct(blind)
    out: Json = {}
    for c in (ALL, *CONSTRUCTS):
        if c not in gi and c not in gb:
            continue
        a, b = gi.get(c, []), gb.get(c, [])
        out[c] = {"image": _levels(a), "blind": _levels(b), "delta": _compare(a, b)}
    return out


def _trend(trajs: Sequence[Trajectory]) -> Json:
    by_team = {str(k): _levels([t for t in trajs if team_size(t) == k]) for k in TEAM_SIZES}
    sr_x = [float(team_size(t)) for t in trajs]
    sr_y = [float(success(t)) for t in trajs]
    cs = [(float(team_size(t)), v) for t in trajs if (v := construct_score(t)) is not None]
    return {"by_team": by_team,
            "slope": {"SR": ols_slope(sr_x, sr_y),
                      "CS": ols_slope([x for x, _ in cs], [y for _, y in cs])}}


def team_size_trend(trajs: Sequence[Trajectory]) -> Json:
    """Return SR and CS per team size and their trend with team size (Fig. 8).

    {construct: {"by_team": {"2"|"3"|"4": {"SR": rate, "CS": mean score, "n"}}, "slope":
    {"SR": slope, "CS": slope}}} for "all" and each construct present; each slope is an
    episode-level least-squares regression of the 0/1 success (or the construct score, over
    the episodes where it is defined) on the team size, with its t-based 95% interval
    (`ols_slope`).
    """
    return {c: _trend(ts) for c, ts in _by_construct(trajs).items()}


ANALYSES: dict[str, Callable[[Sequence[Trajectory]], Json]] = {
    "score_correlations": score_correlations, "termination": termination_shares,
    "failure_shares": failure_shares, "legality_gap": legality_gap,
    "team_size_trend": team_size_trend}
