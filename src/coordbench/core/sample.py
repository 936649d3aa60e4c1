"""Stratified samples: what `--limit K` plays.

A benchmark's cases vary along a few dimensions (a construct and a team size; a structure and
an object count), and its analyses compare strata. Taking the first K cases of a set ordered
stratum by stratum plays one stratum only, so every `--limit K` draws K cases round-robin over
the strata instead:

- the strata (a tuple of values, one per dimension) are ordered so that each one adds the
  dimension values drawn least so far: with constructs D1-D4 x teams 2-4, the first eight
  strata hold every construct twice and every team size two or three times;
- each stratum's members are shuffled by a fixed seed (the same K gives the same cases, on
  every machine and in every process);
- round after round, every stratum that has members left gives its next one, until K are
  drawn; K at or above the population draws everything, once.

The draw order is fixed for a population and seed, so the sample of K is the first K of it:
a smaller sample is part of a larger one (a pilot of one case, or a rerun with a larger K,
plays cases of the same sample).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
Part = str | int
Stratum = tuple[Part, ...]

# the seed of every sample: fixed, so that a sample never depends on the seed of the episodes
# (repeated trials and seed sweeps play the same cases)
SAMPLE_SEED = 0


def default_label(stratum: Stratum) -> str:
    """Return a stratum's name: its values joined by "x" (("D1", 2) -> "D1x2")."""
    return "x".join(str(p) for p in stratum)


def _sortable(stratum: Stratum) -> tuple:
    # numbers before text, numbers by value: 2 objects sort before 10
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in stratum)


def stratum_order(strata: Iterable[Stratum]) -> list[Stratum]:
    """Return the strata in draw order: greedily, the stratum whose values have been drawn
    least so far (summed over the dimensions), ties broken by the strata's sorted order."""
    left = sorted(set(strata), key=_sortable)
    used: dict[tuple[int, Part], int] = {}
    out: list[Stratum] = []
    while left:
        best = min(left, key=lambda s: sum(used.get((d, p), 0) for d, p in enumerate(s)))
        left.remove(best)
        out.append(best)
        for d, p in enumerate(best):
            used[(d, p)] = used.get((d, p), 0) + 1
    return out


def draw_order(strata: Sequence[Stratum], seed: int = SAMPLE_SEED) -> list[int]:
    """Return every index of `strata` (one stratum per population member) in draw order:
    round-robin over `stratum_order`, each stratum's members shuffled by `seed`."""
    members: dict[Stratum, list[int]] = {}
    for k, s in enumerate(strata):
        members.setdefault(s, []).append(k)
    queues = []
    for s in stratum_order(members):
        mine = members[s]
        # a string seed is hashed the same way in every process (PYTHONHASHSEED aside), and
        # naming the stratum keeps one stratum's order independent of the others
        random.Random(f"coordbench-sample/{seed}/{default_label(s)}").shuffle(mine)
        queues.append(mine)
    out: list[int] = []
    for depth in range(max((len(q) for q in queues), default=0)):
        out += [q[depth] for q in queues if depth < len(q)]
    return out


@dataclass(frozen=True)
class Sample:
    """A stratified sample of a population: which members were drawn (`indices`, in
    population order), how many per stratum (`strata`: the strata drawn from, in draw
    order), the population's strata nothing was drawn from (`missing`), and the population's
    strata by name (`parts`: each stratum's values, one per dimension; `sizes`: its members).
    """

    indices: tuple[int, ...]
    population: int
    strata: dict[str, int]
    missing: list[str]
    parts: dict[str, Stratum] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """Return the number of members drawn."""
        return len(self.indices)

    @property
    def whole(self) -> bool:
        """Return whether every member of the population was drawn."""
        return self.size == self.population

    def values(self, dim: int) -> list[Part]:
        """Return the values of dimension `dim` among the strata drawn from (sorted, once)."""
        return sorted({self.parts[s][dim] for s in self.strata},
                      key=lambda p: _sortable((p,)))

    def missing_values(self, dim: int) -> list[Part]:
        """Return the values of dimension `dim` that the population has and the sample
        lacks (sorted)."""
        drawn = set(self.values(dim))
        return sorted({p[dim] for p in self.parts.values()} - drawn,
                      key=lambda p: _sortable((p,)))

    def describe(self, what: str = "cases") -> str:
        """Return one line: "a stratified sample of K of N `what`: S1 k1, S2 k2, ..."."""
        if self.whole:
            return f"all {self.population} {what} (the limit is not below them)"
        counts = ", ".join(f"{s} {n}" for s, n in self.strata.items())
        return f"a stratified sample of {self.size} of {self.population} {what}: {counts}"

    def as_json(self) -> dict[str, Any]:
        """Return {"size", "population", "strata", "missing"} (JSON-ready)."""
        return {"size": self.size, "population": self.population,
                "strata": dict(self.strata), "missing": list(self.missing)}


def stratified_sample(items: Sequence[T], key: Callable[[T], Stratum], k: int | None,
                      seed: int = SAMPLE_SEED,
                      label: Callable[[Stratum], str] = default_label) -> Sample:
    """Return the stratified sample of `k` of `items` (None: every item), each item's
    stratum given by `key` (a tuple of values, one per dimension) and named by `label`.

    The sample is deterministic for `items`, `key` and `seed`, holds no item twice, and is
    the first `k` of `draw_order` (a smaller k draws a part of a larger one's sample)."""
    if k is not None and k < 0:
        raise ValueError(f"a sample size is >= 0, got {k}")
    strata = [tuple(key(item)) for item in items]
    order = draw_order(strata, seed)
    chosen = order if k is None else order[:k]
    names = {s: label(s) for s in strata}
    counts: dict[str, int] = {}
    for i in chosen:
        counts[names[strata[i]]] = counts.get(names[strata[i]], 0) + 1
    sizes: dict[str, int] = {}
    for s in stratum_order(strata):
        sizes[names[s]] = 0
    for s in strata:
        sizes[names[s]] += 1
    drawn = {n: counts[n] for n in sizes if n in counts}  # in draw order
    return Sample(tuple(sorted(chosen)), len(items), drawn,
                  [n for n in sizes if n not in counts],
                  {names[s]: s for s in strata}, sizes)
