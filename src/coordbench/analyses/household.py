"""Analyses of household trajectories (after MECoBench's Figs. 7, 30, 33, 36 and Tables 9, 10,
15, 18-20, 22).

Pure functions of lists of household trajectories (`core.trajectory.Trajectory`, e.g.
`RunDir.open(path).load_episodes(condition)`); each returns plain JSON-serialisable dicts in
the forms of `analyses.common` (rates with Wilson intervals, mean shares with clipped
t-intervals, differences with Newcombe or Welch intervals, slopes with t-intervals).
Episodes of different conditions may be mixed: each analysis groups them by what the header
records (team size, structure, number of target objects).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from coordbench.core.stats import mean_ci
from coordbench.core.trajectory import Trajectory
from coordbench.metrics.behaviour import (
    TAG_RULES_VERSION,
    TAGS,
    episode_indicators,
    episode_tags,
)
from coordbench.metrics.household import (
    completion_curve,
    completion_rate,
    duplicate_grabs,
    hallucinated_completion,
    n_objects,
    step_auc,
    wrong_class_grabs,
)

from .common import (
    Json,
    mean_diff,
    mean_of,
    mean_score,
    num,
    ols_slope,
    proportion_diff,
    rate,
    success,
    team_size,
)

WG_STRATA = ("1", "2", "3", "4+")
MIN_STRATUM = 2  # episodes per group a stratum needs to enter the adjusted effect


def _structure(traj: Trajectory) -> str:
    return str(traj.header.params.get("structure", "parallel"))


def levels(trajs: Sequence[Trajectory]) -> Json:
    """Return SR (Wilson), CR and AUC (clipped t) of a group of episodes, with n."""
    return {"SR": rate(sum(success(t) for t in trajs), len(trajs)),
            "CR": mean_score([completion_rate(t) for t in trajs]),
            "AUC": mean_score([step_auc(t) for t in trajs]), "n": len(trajs)}


def by_objects(trajs: Sequence[Trajectory]) -> Json:
    """Return SR and CR by number of target objects for each team size, with trend lines
    (MECoBench Fig. 7b, Fig. 36, Table 10).

    {"rows": [{"team", "objects", "SR", "CR", "n"}], "trends": {team: {"SR": slope, "CR":
    slope}}}: each slope is the least-squares fit of the episodes' SR (0/1) or CR on their
    object count, with its 95% t-interval (`common.ols_slope`); a negative slope whose
    interval excludes 0 says success falls with object count.
    """
    groups: dict[tuple[int, int], list[Trajectory]] = {}
    for t in trajs:
        groups.setdefault((team_size(t), n_objects(t)), []).append(t)
    rows = []
    for (team, k), mine in sorted(groups.items()):
        lv = levels(mine)
        rows.append({"team": team, "objects": k, "SR": lv["SR"], "CR": lv["CR"], "n": len(mine)})
    trends: dict[str, Json] = {}
    for team in sorted({team_size(t) for t in trajs}):
        mine = [t for t in trajs if team_size(t) == team]
        xs = [float(n_objects(t)) for t in mine]
        trends[str(team)] = {"SR": ols_slope(xs, [float(success(t)) for t in mine]),
                             "CR": ols_slope(xs, [completion_rate(t) for t in mine])}
    return {"rows": rows, "trends": trends}


def team_scaling(groups: Mapping[str, Sequence[Trajectory]]) -> Json:
    """Return SR, CR and AUC per team size for each group (e.g. "with comm." and "without
    comm.", MECoBench Fig. 7a, Tables 9 and 15), with the best team size of each group and
    the SR slope over team sizes.

    {label: {"teams": {team: levels}, "best_team": team with the highest SR (None without
    episodes), "SR_slope": ols_slope of SR on team size}}.
    """
    out: Json = {}
    for label, trajs in groups.items():
        teams = sorted({team_size(t) for t in trajs})
        per = {str(n): levels([t for t in trajs if team_size(t) == n]) for n in teams}
        best = max(teams, key=lambda n: (per[str(n)]["SR"]["mean"] or 0.0, -n)) if teams else None
        out[label] = {"teams": per, "best_team": best,
                      "SR_slope": ols_slope([float(team_size(t)) for t in trajs],
                                            [float(success(t)) for t in trajs])}
    return out


def progress_curves(groups: Mapping[str, Sequence[Trajectory]], points: int = 20) -> Json:
    """Return each group's mean completion over equivalent (effective) steps with a 95% band
    (MECoBench Figs. 30 and 33).

    Every episode's curve is `metrics.household.completion_curve` (CR after each effective
    step, held at its final value); groups whose episodes have different budgets are
    compared on the shortest. {label: {"steps": [e...], "mean": [...], "lo": [...], "hi":
    [...], "n": episodes}}, sampled at about `points` evenly spaced steps.
    """
    out: Json = {}
    for label, trajs in groups.items():
        curves = [completion_curve(t) for t in trajs]
        if not curves:
            out[label] = {"steps": [], "mean": [], "lo": [], "hi": [], "n": 0}
            continue
        budget = min(len(c) for c in curves)
        grid = sorted({max(1, round(budget * (k + 1) / points)) for k in range(points)})
        arr = np.asarray([c[:budget] for c in curves], dtype=np.float64)
        cols = [mean_score(arr[:, e - 1].tolist()) for e in grid]
        out[label] = {"steps": grid, "mean": [c["mean"] for c in cols],
                      "lo": [c["lo"] if c["lo"] is not None else c["mean"] for c in cols],
                      "hi": [c["hi"] if c["hi"] is not None else c["mean"] for c in cols],
                      "n": len(curves)}
    return out


FAILURE_MODES: dict[str, Callable[[Trajectory], bool]] = {
    "hallucinated_completion": hallucinated_completion,
    "grab_conflict": lambda t: duplicate_grabs(t) > 0,
    "object_misidentification": lambda t: wrong_class_grabs(t) > 0,
}


def failure_modes(trajs: Sequence[Trajectory]) -> Json:
    """Return, per failure mode and structure, its frequency, lift, SR with it and delta SR
    (MECoBench Table 22).

    freq = share of episodes showing the mode; lift = (rate in failed episodes) / (rate in
    successful episodes), "inf" when it occurs only in failed ones, None without failed or
    successful episodes or when it never occurs; SR with / without = success among episodes
    with / without it; delta_SR = SR with - SR without (Newcombe interval).
    {structure: {mode: {"freq", "lift", "SR_with", "SR_without", "delta_SR"}}}.
    """
    out: Json = {}
    for structure in sorted({_structure(t) for t in trajs}):
        mine = [t for t in trajs if _structure(t) == structure]
        rows: Json = {}
        for mode, fn in FAILURE_MODES.items():
            has = [fn(t) for t in mine]
            ok = [h for h, t in zip(has, mine, strict=True) if success(t)]
            bad = [h for h, t in zip(has, mine, strict=True) if not success(t)]
            lift: float | str | None = None
            if ok and bad and any(has):
                r_bad, r_ok = sum(bad) / len(bad), sum(ok) / len(ok)
                lift = "inf" if r_ok == 0 else r_bad / r_ok
            k_with = sum(success(t) for h, t in zip(has, mine, strict=True) if h)
            k_wo = sum(success(t) for h, t in zip(has, mine, strict=True) if not h)
            n_with = sum(has)
            rows[mode] = {"freq": rate(n_with, len(mine)), "lift": lift,
                          "SR_with": rate(k_with, n_with),
                          "SR_without": rate(k_wo, len(mine) - n_with),
                          "delta_SR": proportion_diff(k_with, n_with, k_wo, len(mine) - n_with)}
        out[structure] = rows
    return out


def _corrected(traj: Trajectory) -> bool:
    return episode_tags(traj)["Correct."] > 0


def _stratum(wg: int) -> str:
    return "4+" if wg >= 4 else str(wg)


def _effect(with_: Sequence[Trajectory], without: Sequence[Trajectory]) -> Json:
    sr = proportion_diff(sum(success(t) for t in with_), len(with_),
                         sum(success(t) for t in without), len(without))
    cr = mean_diff([completion_rate(t) for t in with_], [completion_rate(t) for t in without])
    return {"SR": sr, "CR": cr}


def correction_effect(trajs: Sequence[Trajectory]) -> Json:
    """Return the effect of correction messages overall and given wrong grabs, raw and
    stratified by the number of wrong grabs (MECoBench Tables 19 and 20).

    A correction is a message with the Correct. tag; a wrong grab (WG) a successful grab of
    an object no subgoal asks for (`wrong_class_grabs`). Per structure:
    - "overall": SR, CR and mean #WG with and without correction, and their difference;
    - "wg_conditional" (episodes with >= 1 WG): the same, the raw difference, and the
      adjusted one: sum_s w_s (x_corr,s - x_none,s) over the WG strata s (1, 2, 3, 4+) where
      both groups have at least `MIN_STRATUM` episodes (a bootstrap of one episode has no
      spread to show), with shared weights w_s = (episodes in s) / (episodes in
      those strata), so that both groups are weighted alike (the paper's "shared stratum
      weights"), as a difference with a stratified bootstrap interval (`_adjusted`); SR and
      CR None when no stratum has both groups;
    - "strata": per stratum, n, SR and CR of each group and the differences.
    """
    out: Json = {}
    for structure in sorted({_structure(t) for t in trajs}):
        mine = [t for t in trajs if _structure(t) == structure]
        corr = [t for t in mine if _corrected(t)]
        none = [t for t in mine if not _corrected(t)]

        def side(group: Sequence[Trajectory]) -> Json:
            return {**levels(group), "WG": mean_of([float(wrong_class_grabs(t)) for t in group])}

        wg = [t for t in mine if wrong_class_grabs(t) > 0]
        wg_corr = [t for t in wg if _corrected(t)]
        wg_none = [t for t in wg if not _corrected(t)]
        strata: Json = {}
        both: list[str] = []
        for s in WG_STRATA:
            a = [t for t in wg_corr if _stratum(wrong_class_grabs(t)) == s]
            b = [t for t in wg_none if _stratum(wrong_class_grabs(t)) == s]
            strata[s] = {"corrected": levels(a), "uncorrected": levels(b),
                         "delta": _effect(a, b)}
            if len(a) >= MIN_STRATUM and len(b) >= MIN_STRATUM:
                both.append(s)
        adjusted: Json = {"SR": None, "CR": None, "strata": both}
        if both:
            groups = {s: ([t for t in wg_corr if _stratum(wrong_class_grabs(t)) == s],
                          [t for t in wg_none if _stratum(wrong_class_grabs(t)) == s])
                      for s in both}
            for key, fn in (("SR", lambda t: float(success(t))), ("CR", completion_rate)):
                adjusted[key] = _adjusted({s: ([fn(t) for t in a], [fn(t) for t in b])
                                           for s, (a, b) in groups.items()})
        out[structure] = {
            "overall": {"corrected": side(corr), "uncorrected": side(none),
                        "delta": _effect(corr, none)},
            "wg_conditional": {"corrected": side(wg_corr), "uncorrected": side(wg_none),
                               "raw_delta": _effect(wg_corr, wg_none), "adjusted": adjusted},
            "strata": strata}
    return out


def _adjusted(strata: Mapping[str, tuple[Sequence[float], Sequence[float]]],
              reps: int = 2000, seed: int = 0) -> Json:
    """Return the stratum-weighted difference sum_s w_s (mean(a_s) - mean(b_s)), w_s = (n_a,s
    + n_b,s) / sum of those over the strata, with a 95% stratified percentile bootstrap
    interval (each group resampled within its stratum, the weights fixed)."""
    total = sum(len(a) + len(b) for a, b in strata.values())
    weights = {s: (len(a) + len(b)) / total for s, (a, b) in strata.items()}
    delta = sum(w * (float(np.mean(strata[s][0])) - float(np.mean(strata[s][1])))
                for s, w in weights.items())
    rng = np.random.default_rng(seed)
    boot = np.zeros(reps)
    for s, w in weights.items():
        a, b = (np.asarray(x, dtype=np.float64) for x in strata[s])
        boot += w * (a[rng.integers(0, a.size, (reps, a.size))].mean(axis=1)
                     - b[rng.integers(0, b.size, (reps, b.size))].mean(axis=1))
    lo, hi = np.quantile(boot, [0.025, 0.975])
    return {"delta": num(delta), "lo": num(float(lo)), "hi": num(float(hi)),
            "n": sum(len(a) for a, _ in strata.values()),
            "n_ref": sum(len(b) for _, b in strata.values()), "method": "stratified bootstrap"}


def _shows(traj: Trajectory, indicator: str) -> bool:
    return indicator in episode_indicators(traj)


def coordination_queries(trajs: Sequence[Trajectory]) -> Json:
    """Return, per structure, episodes with and without a coordination query (Coord-Q tag):
    n, mean number of target objects, SR, and the share with a negative report or a stuck
    report (`behaviour.indicators`) (MECoBench Table 18).

    {structure: {"with_query": {...}, "without_query": {...}, "delta_SR": Newcombe}}, each
    side {"n", "objects" (mean ± t), "SR", "stuck", "negative" (rates)}.
    """
    out: Json = {}
    for structure in sorted({_structure(t) for t in trajs}):
        mine = [t for t in trajs if _structure(t) == structure]
        asked = [t for t in mine if episode_tags(t)["Coord-Q"] > 0]
        quiet = [t for t in mine if episode_tags(t)["Coord-Q"] == 0]

        def side(group: Sequence[Trajectory]) -> Json:
            return {"n": len(group), "objects": mean_of([float(n_objects(t)) for t in group]),
                    "SR": rate(sum(success(t) for t in group), len(group)),
                    "stuck": rate(sum(_shows(t, "stuck") for t in group), len(group)),
                    "negative": rate(sum(_shows(t, "negative_report") for t in group),
                                     len(group))}

        out[structure] = {"with_query": side(asked), "without_query": side(quiet),
                          "delta_SR": proportion_diff(
                              sum(success(t) for t in asked), len(asked),
                              sum(success(t) for t in quiet), len(quiet))}
    return out


def tag_table(trajs: Iterable[Trajectory]) -> list[dict[str, object]]:
    """Return per tag: share of episodes using it, messages per episode, and SR/CR with vs
    without it (delta = with - without; None where either side has no episode)."""
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
