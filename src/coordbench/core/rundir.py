"""Run directories: a manifest, atomically written episode files, and a reader.

Layout::

    RUN/manifest.json                      what was run (one spec per condition), provenance
    RUN/episodes/<condition>/<key>.jsonl   one complete trajectory per file
    RUN/errors/<condition>/<key>.jsonl     episodes errored by a provider failure: kept for
                                           inspection, not results, replayed by a rerun
    RUN/damaged/<condition>/<key>.jsonl    episode files found unusable on resume (truncated,
                                           unreadable, another episode's): set aside, replayed
    RUN/harness_stats.json                 the model harness's counters, one entry per command
    RUN/results.json, RUN/report.md        derived; recomputable from the episodes

An episode file exists only once the episode is complete (write, fsync, rename), so a rerun of
the same command skips exactly the finished episodes. One command writes to a run at a time
(`RunDir.lock`).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from coordbench.errors import RunDirError

from .atomic import write_atomic
from .provenance import git_sha, version
from .trajectory import SCHEMA_VERSION, Trajectory

_HEX64 = re.compile(r"[0-9a-f]{64}")

FORMAT = "coordbench-run"
FORMAT_VERSION = 1
HEADER_MAX = 1 << 20  # bytes of an episode's header line (real ones are a few KiB)
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=+-]*$")
# a condition or episode name is a folder or file name under the run: 200 characters at most
# (file systems take 255 bytes a name; the rest is room for suffixes and temporary files)
NAME_LIMIT = 200
NAME_RULE = (f"at most {NAME_LIMIT} characters: letters, digits and _ . = + -, starting with a "
             "letter or digit")
TAIL = 65536  # bytes read from an episode file's end: the episode_end line is short


class HeaderTooLong(ValueError):
    """An episode file's first line is longer than any header coordbench writes."""


def head_tail(path: Path) -> tuple[Any, Any]:
    """Return an episode file's first and last lines parsed as JSON, reading only those
    (ValueError for a line that is not JSON, is nested past the parser or is a header over
    HEADER_MAX bytes; OSError where the file cannot be read)."""
    with Path(path).open("rb") as f:
        first = f.readline(HEADER_MAX)
        f.seek(max(0, Path(path).stat().st_size - TAIL))
        last = f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    if not first.endswith(b"\n") and len(first) >= HEADER_MAX:
        raise HeaderTooLong(f"a header line over {HEADER_MAX:,} bytes")
    try:
        return json.loads(first), json.loads(last)
    except RecursionError:  # a line nested past the parser: not an episode
        raise ValueError("a line is nested too deep") from None


def safe_name(text: str) -> str:
    """Return `text` with every character a condition name cannot hold replaced by '-'."""
    return re.sub(r"[^A-Za-z0-9_.=+-]", "-", text)


def storable(name: str) -> bool:
    """Return whether a run directory can store `name` as a condition or episode name."""
    return len(name) <= NAME_LIMIT and _SAFE.match(name) is not None


def _check_name(kind: str, name: str) -> str:
    if len(name) > NAME_LIMIT:
        raise RunDirError(f"{kind} name {name[:40]!r}... has {len(name)} characters; a run "
                          f"directory stores names of {NAME_RULE}")
    if not _SAFE.match(name):
        raise RunDirError(f"{kind} name {name[:80]!r} has characters a run directory cannot "
                          f"store (names are {NAME_RULE})")
    return name


def _training_file(p: Path) -> bool:
    return p.is_file() and "_seed" in p.name and p.suffix in (".json", ".pt")


def _keys(folder: Path) -> list[str]:
    """Return the sorted keys of the episode files in `folder` (none if it is missing)."""
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.jsonl") if not p.name.startswith("."))


class RunDir:
    """A run directory on disk (see the module docstring for the layout)."""

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path = Path(path)
        self.manifest = manifest
        self.set_aside_log: list[str] = []  # episode files this object moved to damaged/
        # the command that opened the run now (the manifest keeps the one that created it)
        self.command: str = str(manifest.get("command") or "")

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        """Return the existing run directory at `path`; raise RunDirError if missing or corrupt."""
        path = Path(path)
        mpath = path / "manifest.json"
        if not path.is_dir():
            raise RunDirError(f"run directory {path} does not exist")
        if not mpath.is_file():
            raise RunDirError(f"{path} is not a coordbench run directory (no manifest.json)")
        try:
            manifest = json.loads(mpath.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise RunDirError(f"{mpath} is corrupt: {e}") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise RunDirError(f"{mpath} is not a coordbench run manifest")
        if manifest.get("format_version") != FORMAT_VERSION:
            raise RunDirError(f"{mpath} has format version {manifest.get('format_version')}; "
                              f"this coordbench reads version {FORMAT_VERSION}")
        if not isinstance(manifest.get("conditions"), dict):
            raise RunDirError(f"{mpath} is corrupt: 'conditions' is missing")
        for name, spec in manifest["conditions"].items():
            # a name is a folder under episodes/: '../x' would reach outside the run
            if not storable(name):
                raise RunDirError(f"{mpath} is corrupt: condition name {name[:80]!r} is not "
                                  f"a name a run directory stores ({NAME_RULE})")
            if not isinstance(spec, dict):
                raise RunDirError(f"{mpath} is corrupt: condition {name} records "
                                  f"{type(spec).__name__}, not its spec")
        for folder in ("episodes", "errors"):  # else every condition would look empty
            if (path / folder).exists() and not (path / folder).is_dir():
                raise RunDirError(f"{path / folder} is not a folder: the run's {folder} "
                                  "cannot be read")
        return cls(path, manifest)

    @classmethod
    def create_or_open(cls, path: str | Path, command: str = "", adopt: bool = False
                       ) -> RunDir:
        """Return the run directory at `path`, creating it (and its manifest) if needed.

        `adopt`: a directory holding only training results (`*_seed*.json`, `*.pt`) may be
        given a manifest too."""
        path = Path(path)
        if (path / "manifest.json").exists():
            run = cls.open(path)
            run.command = command or run.command  # this command, not the folder's first
            return run
        if path.exists() and not path.is_dir():
            raise RunDirError(f"{path} exists and is not a directory")
        if path.is_dir() and any(not (adopt and _training_file(p)) for p in path.iterdir()):
            raise RunDirError(f"{path} is not empty and has no manifest.json; "
                              "choose a new --out directory")
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "schema_version": SCHEMA_VERSION,
            "coordbench_version": version(),
            "git_sha": git_sha(),
            "created": datetime.now(UTC).isoformat(),
            "command": command,
            "conditions": {},
        }
        run = cls(path, manifest)
        run.save_manifest()
        return run

    def save_manifest(self) -> None:
        """Write the manifest atomically."""
        write_atomic(self.path / "manifest.json", json.dumps(self.manifest, indent=2) + "\n")

    # -- conditions ---------------------------------------------------------------------------
    @property
    def conditions(self) -> dict[str, dict[str, Any]]:
        """Return {condition id: spec} for every condition registered in this run."""
        return self.manifest["conditions"]

    def register(self, condition: str, spec: dict[str, Any]) -> None:
        """Record `spec` under `condition`; raise RunDirError if it was run with another spec."""
        _check_name("condition", condition)
        old = self.conditions.get(condition)
        if old is not None:
            if old != spec:
                raise RunDirError(f"condition {condition} in {self.path} was run with a different "
                                  f"spec ({old} != {spec}); use a new --out directory")
            return
        self.conditions[condition] = spec
        self.save_manifest()

    # -- one writer ---------------------------------------------------------------------------
    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold this run's writer lock (released when the process ends, however it ends);
        raise RunDirError if another command holds it."""
        fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RunDirError(f"another coordbench command is writing to {self.path}; "
                                  "wait for it to end or choose another --out") from None
            yield
        finally:
            os.close(fd)

    def remove_stale_temporaries(self, condition: str) -> int:
        """Delete the half-written temporary files a killed command left in `condition`'s
        folders and in the run's rendered views (call it holding the lock, before any work
        is dispatched); return how many there were."""
        n = 0
        for folder in (self.path / "episodes" / condition, self.path / "errors" / condition,
                       self.path / "images"):
            for tmp in folder.glob(".*.tmp"):
                tmp.unlink(missing_ok=True)
                n += 1
        return n

    # -- episodes -----------------------------------------------------------------------------
    def episode_path(self, condition: str, key: str) -> Path:
        """Return the file path of episode `key` of `condition`."""
        return self.path / "episodes" / condition / f"{_check_name('episode', key)}.jsonl"

    def errored_path(self, condition: str, key: str) -> Path:
        """Return where the errored attempt at episode `key` of `condition` is kept."""
        return self.path / "errors" / condition / f"{_check_name('episode', key)}.jsonl"

    def episode_problem(self, condition: str, key: str) -> str | None:
        """Return why the file of episode `key` cannot be counted ("missing", or what is
        wrong with it), or None if it is a complete episode of this case. Reads only its
        first and last lines."""
        path = self.episode_path(condition, key)
        if not path.exists():
            return "missing"
        if not path.is_file():
            return "not a file"
        try:
            head, last = head_tail(path)
        except HeaderTooLong as e:
            return f"unreadable ({e})"
        except (OSError, ValueError) as e:
            return f"unreadable ({type(e).__name__})"
        if not isinstance(head, dict) or head.get("kind") != "header":
            return "no header line"
        if head.get("episode_id") != f"{condition}/{key}":
            return f"it holds episode {str(head.get('episode_id'))[:80]!r}"
        if not isinstance(last, dict) or last.get("type") != "episode_end":
            return "truncated (no episode_end)"
        return None

    def set_aside(self, condition: str, key: str) -> Path:
        """Move an unusable episode file to RUN/damaged/ (nothing is deleted); return where.
        The moves of this RunDir object are listed in `set_aside_log`, for the command to
        say so."""
        src = self.episode_path(condition, key)
        dst = self.path / "damaged" / condition / src.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dst)
        self.set_aside_log.append(f"{condition}/{key}")
        return dst

    def write_errored(self, condition: str, key: str, text: str) -> Path:
        """Atomically keep an errored episode (serialized) for inspection; return its path."""
        path = self.errored_path(condition, key)
        write_atomic(path, text)
        return path

    def errored_keys(self, condition: str) -> list[str]:
        """Return the keys of `condition`'s episodes whose last attempt errored, sorted."""
        return _keys(self.path / "errors" / condition)

    def write_episode(self, condition: str, key: str, trajectory: Trajectory) -> Path:
        """Atomically write a complete trajectory; return its path."""
        if trajectory.end is None:
            raise RunDirError(f"episode {key} of {condition} is incomplete (no episode_end)")
        return self.write_episode_text(condition, key, trajectory.to_jsonl())

    def write_episode_text(self, condition: str, key: str, text: str) -> Path:
        """Atomically write a complete trajectory already serialized as JSONL (a worker
        serializes, the driver writes); return its path. An errored earlier attempt at the
        same episode is removed: it has been replayed."""
        path = self.episode_path(condition, key)
        write_atomic(path, text)
        self.errored_path(condition, key).unlink(missing_ok=True)
        return path

    def prompt_path(self, request_hash: str) -> Path:
        """Return where the prompt of a model call with this request hash is kept."""
        if not _HEX64.fullmatch(request_hash):
            raise RunDirError(f"{request_hash!r} is not a request hash")
        return self.path / "prompts" / f"{request_hash}.json"

    def write_prompt(self, request_hash: str, text: str) -> None:
        """Store a prompt once: a request hash names exactly one prompt."""
        path = self.prompt_path(request_hash)
        if not path.exists():
            write_atomic(path, text)

    def load_prompt(self, request_hash: str) -> dict[str, Any] | None:
        """Return the stored prompt of a model call ({"model", "messages"}), or None when
        the run holds none (calls made before coordbench stored prompts)."""
        path = self.prompt_path(request_hash)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise RunDirError(f"prompt file {path} is corrupt: {e}") from None

    def find_episode(self, episode: str) -> tuple[str, str]:
        """Return (condition, key) of `episode`, given as CONDITION/KEY (the header's
        episode_id) or as a KEY that only one condition has; ConfigError naming what
        exists otherwise."""
        from coordbench.errors import ConfigError

        first = next((f"{c}/{k[0]}" for c in self.conditions if (k := self.episode_keys(c))),
                     None)
        hint = f" (e.g. {first})" if first else " (it has no episodes)"
        if "/" in episode:
            cond, key = episode.rsplit("/", 1)
            if cond not in self.conditions:
                raise ConfigError(f"no condition {cond!r} in {self.path}; give "
                                  f"CONDITION/KEY{hint}")
            if key in self.episode_keys(cond):
                return cond, key
            raise ConfigError(f"no episode {episode!r} in {self.path}; give "
                              f"CONDITION/KEY{hint}")
        found = [c for c in self.conditions if episode in self.episode_keys(c)]
        if len(found) == 1:
            return found[0], episode
        if found:
            raise ConfigError(f"episode {episode!r} is in {len(found)} conditions of "
                              f"{self.path}; name one: "
                              f"{', '.join(f'{c}/{episode}' for c in found[:3])}")
        raise ConfigError(f"no episode {episode!r} in {self.path}; give CONDITION/KEY{hint}")

    def episode_keys(self, condition: str) -> list[str]:
        """Return the keys of the complete episodes of `condition`, sorted."""
        return _keys(self.path / "episodes" / condition)

    def load_episode(self, condition: str, key: str) -> Trajectory:
        """Return one trajectory; raise RunDirError naming the file if it is corrupt."""
        path = self.episode_path(condition, key)
        try:
            traj = Trajectory.from_jsonl(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, ValidationError, RecursionError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise RunDirError(f"corrupt episode file {path}: {first}") from None
        if traj.end is None:
            raise RunDirError(f"corrupt episode file {path}: it has no episode_end event")
        if traj.header.episode_id != f"{condition}/{key}":
            raise RunDirError(f"episode file {path} holds another episode "
                              f"({traj.header.episode_id[:80]!r})")
        return traj

    def load_episodes(self, condition: str) -> list[Trajectory]:
        """Return every complete trajectory of `condition`, in key order."""
        return [self.load_episode(condition, k) for k in self.episode_keys(condition)]

    # -- derived outputs ----------------------------------------------------------------------
    def write_text(self, name: str, text: str) -> Path:
        """Atomically write a derived file (report, results) at the run's top level."""
        path = self.path / name
        write_atomic(path, text)
        return path
