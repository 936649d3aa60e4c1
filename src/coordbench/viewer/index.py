"""The cheap index of a run: conditions, and per condition its episodes from file names and
each file's first and last line, so a listing of a thousand episodes needs no full parse.

Bad episodes are listed too, each with its reason: a file that cannot be read or does not end
with `episode_end`, a key missing from an otherwise numbered sequence (of a `--limit` sample:
one the sample holds), an attempt errored by a model provider (`RUN/errors/`), a file set
aside on resume (`RUN/damaged/`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from coordbench.core.rundir import RunDir, head_tail
from coordbench.errors import CoordbenchError, RunDirError

_NUMBERED = re.compile(r"^(.*?)(\d+)$")


@dataclass
class EpisodeRow:
    """One line of a condition's listing. `status` is ok, bad (unreadable or incomplete),
    missing, errored or damaged; `problem` says why for every status but ok."""

    key: str
    status: str = "ok"
    problem: str | None = None
    termination: str | None = None
    success: bool | None = None
    steps: int | None = None
    task_id: str | None = None
    seed: int | None = None
    detail: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return the row as a JSON-ready dict."""
        return asdict(self)


def suite_name(condition: str, spec: dict[str, Any]) -> str:
    """Return the suite a condition belongs to (recorded, or inferred from an old name);
    "unknown" when neither says."""
    from coordbench.report.compose import suite_of

    try:
        return suite_of(condition, spec)
    except RunDirError:
        return "unknown"


def _head_tail(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the parsed first and last lines of a JSONL file (ValueError if either is not
    a JSON object)."""
    head, tail = head_tail(path)
    if not isinstance(head, dict) or not isinstance(tail, dict):
        raise ValueError("a line is not a JSON object")
    return head, tail


def open_runs(path: Path) -> dict[str, RunDir]:
    """Return the runs at `path` opened (`find_runs`); in a folder of runs, one that cannot
    be opened (a damaged or foreign manifest) is left out with a warning on stderr, and
    RunDirError only when none opens."""
    import sys

    found = find_runs(path)
    if len(found) == 1:
        return {name: RunDir.open(p) for name, p in found.items()}
    runs, problems = {}, []
    for name, p in found.items():
        try:
            runs[name] = RunDir.open(p)
        except RunDirError as e:
            problems.append(str(e))
    if not runs:
        raise RunDirError(problems[0])
    for problem in problems:
        print(f"warning: left out: {problem}", file=sys.stderr)
    return runs


def episode_row(run: RunDir, condition: str, key: str) -> EpisodeRow:
    """Return the listing row of episode `key` from its first and last line only."""
    row = EpisodeRow(key)
    path = run.path / "episodes" / condition / f"{key}.jsonl"
    try:
        head, tail = _head_tail(path)
    except (OSError, ValueError) as e:
        row.status, row.problem = "bad", f"unreadable ({type(e).__name__})"
        return row
    if head.get("kind") != "header":
        row.status, row.problem = "bad", "no header line"
        return row
    row.task_id = str(head.get("task_id")) if head.get("task_id") is not None else None
    row.seed = head.get("seed") if isinstance(head.get("seed"), int) else None
    if head.get("episode_id") != f"{condition}/{key}":
        row.status = "bad"
        row.problem = f"holds another episode ({str(head.get('episode_id'))[:80]!r})"
        return row
    if tail.get("type") != "episode_end":
        row.status, row.problem = "bad", "truncated (no episode_end)"
        return row
    row.termination = str(tail.get("termination"))
    row.success = bool(tail.get("success"))
    row.steps = tail.get("t") if isinstance(tail.get("t"), int) else None
    row.detail = tail.get("detail") if isinstance(tail.get("detail"), str) else None
    return row


def _stems(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.jsonl") if not p.name.startswith("."))


def _gaps(keys: list[str]) -> list[str]:
    """Return the keys missing from a numbered sequence (case0000, case0002 -> case0001).

    Only gaps between the first and last present key can be seen: how many episodes a
    condition should have is the suite's to say, and asking it can mean building cases."""
    numbered: dict[tuple[str, int], list[int]] = {}
    for k in keys:
        m = _NUMBERED.match(k)
        if m:
            numbered.setdefault((m.group(1), len(m.group(2))), []).append(int(m.group(2)))
    missing = []
    for (prefix, width), nums in numbered.items():
        have = set(nums)
        missing += [f"{prefix}{n:0{width}d}" for n in range(min(nums), max(nums))
                    if n not in have]
    return missing


def _missing(run: RunDir, condition: str, keys: list[str]) -> list[str]:
    """Return the keys missing among `keys`: the numbered gaps (`_gaps`), of a suite that
    draws `--limit` samples (`sample_keys`) only those its sample holds. Samples nest (a
    sample of K is the first K of the suite's draw order), so the smallest sample holding
    every key there is ends at the last of them; a gap outside it was never drawn."""
    gaps = _gaps(keys)
    order = _draw_order(run, condition) if gaps else None
    if order is None:
        return gaps
    position = {k: i for i, k in enumerate(order)}
    last = max((position[k] for k in keys if k in position), default=-1)
    return [k for k in gaps if position.get(k, len(order)) <= last]


def _draw_order(run: RunDir, condition: str) -> list[str] | None:
    """Return the condition's case keys in its suite's `--limit` draw order (None: the
    suite draws no samples, or its cases cannot be rebuilt here, e.g. a task file gone)."""
    from coordbench.runner.family import family

    fields = run.conditions.get(condition) or {}
    f = family(str(fields.get("suite")))
    suite = f.get("suite") if f is not None else None
    keys_of = getattr(suite, "sample_keys", None)
    if keys_of is None:
        return None
    try:
        return keys_of(fields)
    except (CoordbenchError, OSError, KeyError, ValueError, TypeError):
        return None


def condition_rows(run: RunDir, condition: str) -> list[EpisodeRow]:
    """Return every episode row of `condition`: the files on disk, plus the missing, errored
    and set-aside episodes, each with its reason; sorted by key."""
    keys = _stems(run.path / "episodes" / condition)
    rows = {k: episode_row(run, condition, k) for k in keys}
    for k in _stems(run.path / "errors" / condition):
        if k not in rows:
            rows[k] = EpisodeRow(k, status="errored", problem=_errored_reason(run, condition, k))
    for k in _stems(run.path / "damaged" / condition):
        if k not in rows:
            rows[k] = EpisodeRow(k, status="damaged", problem="set aside under damaged/ on "
                                 "resume (unusable file); not replayed yet")
    for k in _missing(run, condition, sorted(rows)):
        rows[k] = EpisodeRow(k, status="missing", problem="no file, though episodes before "
                             "and after it exist")
    return [rows[k] for k in sorted(rows)]


def _errored_reason(run: RunDir, condition: str, key: str) -> str:
    try:
        _, tail = _head_tail(run.path / "errors" / condition / f"{key}.jsonl")
        detail = tail.get("detail")
    except (OSError, ValueError):
        detail = None
    why = f": {str(detail)[:200]}" if detail else ""
    return f"errored by a model provider failure (errors/), not counted{why}"


def conditions(run: RunDir) -> list[dict[str, Any]]:
    """Return one entry per condition of the manifest: its name, suite, spec and how many
    episode files it has (counted from the folder listing only)."""
    out = []
    for cond, spec in run.conditions.items():
        folder = run.path / "episodes" / cond
        n = len(_stems(folder))
        out.append({"name": cond, "suite": suite_name(cond, spec if isinstance(spec, dict)
                                                      else {}),
                    "spec": spec, "episodes": n,
                    "errored": len(_stems(run.path / "errors" / cond)),
                    "damaged": len(_stems(run.path / "damaged" / cond))})
    return out


RUN_DEPTH = 3  # folders of runs nest this deep (runs/stat-eval/<config>-<policy>)


def find_runs(path: Path) -> dict[str, Path]:
    """Return {name: run directory} for `path` itself (a run) or for the runs in its
    subfolders, up to RUN_DEPTH levels down, each named by its path under `path`
    (`stat-eval/3A-6T-5x3-greedy`; a run's own folders are not searched); RunDirError if
    there is none."""
    path = Path(path)
    if not path.exists():
        raise RunDirError(f"{path} does not exist")
    if not path.is_dir():
        raise RunDirError(f"{path} is not a directory (give a run directory)")
    if (path / "manifest.json").exists():
        return {path.resolve().name or "run": path}
    runs: dict[str, Path] = {}
    level = [path]
    for _ in range(RUN_DEPTH):
        below = []
        for folder in level:
            try:
                entries = sorted(folder.iterdir())
            except OSError:  # a folder this user cannot read holds no run we can show
                continue
            for p in entries:
                if not p.is_dir():
                    continue
                if (p / "manifest.json").is_file():  # a run, even through a link
                    runs[p.relative_to(path).as_posix()] = p
                elif not p.is_symlink():  # links are not followed further down
                    below.append(p)
        level = below
    if not runs:
        raise RunDirError(f"{path} is not a coordbench run directory (no manifest.json, "
                          "and no subfolder holds one)")
    return runs
