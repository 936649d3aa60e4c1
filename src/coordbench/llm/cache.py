"""A sqlite response cache keyed on everything that determines a model's reply."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from coordbench.errors import ConfigError

DEFAULT_CACHE = Path.home() / ".cache" / "coordbench" / "responses.sqlite"


def strip_images(obj: Any) -> Any:
    """Return messages (or any part of them) with every image replaced by the sha256 of its
    data URL: what identifies a request, and what a stored prompt keeps of its images."""
    if isinstance(obj, dict):
        if obj.get("type") == "image_url":
            url = obj.get("image_url", {}).get("url", "")
            return {"type": "image", "sha256": hashlib.sha256(url.encode()).hexdigest()}
        return {k: strip_images(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [strip_images(v) for v in obj]
    return obj


def images_as_files(obj: Any) -> Any:
    """Return messages with every inline PNG replaced by {"type": "image", "sha256": ...},
    the sha256 of its decoded bytes: the name `--images` stores it under (RUN/images/), so a
    stored prompt points at the picture the model was shown."""
    import base64
    import binascii

    if isinstance(obj, dict):
        if obj.get("type") == "image_url":
            url = str(obj.get("image_url", {}).get("url", ""))
            head, _, data = url.partition(",")
            try:
                raw = base64.b64decode(data, validate=True) if head.endswith(";base64") \
                    else url.encode()
            except (binascii.Error, ValueError):
                raw = url.encode()
            return {"type": "image", "sha256": hashlib.sha256(raw).hexdigest()}
        return {k: images_as_files(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [images_as_files(v) for v in obj]
    return obj


def request_key(spec_model: str, base_url: str | None, messages: list[dict[str, Any]],
                generation: dict[str, Any]) -> str:
    """Return the sha256 of (model, base_url, messages with images as hashes, generation).

    The generation config includes the seed when one is set.
    """
    payload = {"model": spec_model, "base_url": base_url or "", "messages":
               strip_images(messages), "generation": generation}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


class ResponseCache:
    """key -> stored completion (JSON). Safe to share across threads of one process."""

    def __init__(self, path: str | Path = DEFAULT_CACHE) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        if self.path.is_dir():
            raise ConfigError(f"--cache-path {self.path}: is a folder, expected a sqlite file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False)
        except OSError as e:
            raise ConfigError(f"--cache-path {self.path}: cannot create its folder "
                              f"({e.strerror or e})") from None
        except sqlite3.Error as e:
            raise ConfigError(f"--cache-path {self.path}: cannot open the response cache "
                              f"({e})") from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, "
                             "value TEXT NOT NULL)")
            # a database of something else opens fine; it must hold our table's two columns
            cols = [r[1] for r in self._db.execute("PRAGMA table_info(responses)")]
            if cols != ["key", "value"]:
                raise sqlite3.DatabaseError(f"its 'responses' table has columns {cols}")
            self._db.commit()
        except sqlite3.Error as e:
            self._db.close()
            raise ConfigError(f"--cache-path {self.path}: not a coordbench response cache "
                              f"(sqlite: {e})") from None

    def get(self, key: str) -> dict[str, Any] | None:
        """Return the stored completion for `key`, or None."""
        with self._lock:
            row = self._db.execute("SELECT value FROM responses WHERE key = ?",
                                   (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store a completion (only successful ones are ever stored)."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?)",
                             (key, json.dumps(value)))
            self._db.commit()

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
