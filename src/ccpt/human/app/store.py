"""Answers in SQLite (``STUDY_DIR/human.sqlite``), in WAL mode so annotators never block each other.

Every answer is committed when it is given, so a reload, a lost connection or a server restart loses
nothing. Each call opens its own short connection: the server answers requests on several threads.
"""

from __future__ import annotations

import hmac
import json
import secrets
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccpt.errors import DataError

DB_NAME = "human.sqlite"
# How long a request waits for another writer before the app answers 503 (try again): short, so a busy
# database costs an annotator seconds and a retry, not a 30-second hang and an error page.
BUSY_SECONDS = 3.0
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS annotators (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, token TEXT NOT NULL UNIQUE, submitted_at REAL
);
CREATE TABLE IF NOT EXISTS assignments (
    annotator INTEGER NOT NULL REFERENCES annotators(id), position INTEGER NOT NULL,
    study TEXT NOT NULL, item TEXT NOT NULL, PRIMARY KEY (annotator, position), UNIQUE (annotator, study, item)
);
CREATE TABLE IF NOT EXISTS answers (
    annotator INTEGER NOT NULL, study TEXT NOT NULL, item TEXT NOT NULL, value TEXT NOT NULL,
    updated_at REAL NOT NULL, PRIMARY KEY (annotator, study, item),
    FOREIGN KEY (annotator, study, item) REFERENCES assignments(annotator, study, item)
);
"""

# Every table of the schema with its columns in order: a database holding anything else is not a study's.
COLUMNS: dict[str, list[str]] = {
    "meta": ["key", "value"],
    "annotators": ["id", "name", "token", "submitted_at"],
    "assignments": ["annotator", "position", "study", "item"],
    "answers": ["annotator", "study", "item", "value", "updated_at"],
}


class Busy(Exception):
    """The database stayed locked by another writer for :data:`BUSY_SECONDS` (the app answers 503)."""


@dataclass(frozen=True)
class Annotator:
    """One person with a secret link."""

    id: int
    name: str
    token: str
    submitted: bool


@dataclass(frozen=True)
class Assignment:
    """The item at ``position`` (1-based) of an annotator's list."""

    position: int
    study: str
    item: str


class Store:
    """The study database."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            with self._connect() as db:
                self._refuse_foreign(db)
                db.executescript(SCHEMA)
        except Busy:
            raise DataError(f"{path}: the study database is locked by another process", "stop it, then retry") from None
        except sqlite3.DatabaseError as exc:  # not a database, truncated, or another program's file
            raise DataError(
                f"{path}: not a readable study database ({exc})",
                "restore it from a backup, or start a new study directory",
            ) from None

    def _refuse_foreign(self, db: sqlite3.Connection) -> None:
        """One line for a database that is not a study's: other tables, or ours with other columns. Never added to
        (the schema's CREATE IF NOT EXISTS would otherwise move into another program's file)."""
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        foreign = sorted(t for t in tables - set(COLUMNS) if not t.startswith("sqlite_"))
        changed = sorted(
            t for t in tables & set(COLUMNS) if [r[1] for r in db.execute(f"PRAGMA table_info({t})")] != COLUMNS[t]
        )
        if foreign or changed:
            parts = (("other tables", foreign), ("tables with other columns", changed))
            what = "; ".join(f"{label}: {', '.join(names)}" for label, names in parts if names)
            raise DataError(
                f"{self.path}: not a ccpt study database ({what})", "start the study in a directory of its own"
            )

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            db = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None)
        except sqlite3.OperationalError as exc:
            raise DataError(f"{self.path}: cannot open the study database ({exc})") from None
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # an acknowledged answer survives a power cut
            db.execute("PRAGMA foreign_keys=ON")
            yield db
        except sqlite3.OperationalError as exc:
            # By SQLite's result code (the low byte: extended codes such as SQLITE_BUSY_SNAPSHOT included).
            if (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise Busy(str(exc)) from None
            raise
        finally:
            db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._connect() as db, db:  # the connection commits on success, rolls back on an exception
            db.execute("BEGIN IMMEDIATE")
            yield db

    def initialised(self) -> bool:
        """Whether annotators and assignments exist already (a restarted study)."""
        return bool(self.annotators())

    def initialise(
        self, names: Sequence[str], assignments: Sequence[Sequence[tuple[str, str]]], items_sha256: str
    ) -> None:
        """Create the annotators (one fresh token each), the admin token and everyone's assignment at once;
        ``items_sha256``: what the items show (:meth:`items_sha256`), checked when the study is served again."""
        if len(set(names)) != len(names) or any(not n.strip() for n in names):
            raise DataError("annotator names must be non-empty and distinct")
        with self._transaction() as db:
            # Unguessable link tokens: 192 bits each.
            db.execute("INSERT INTO meta VALUES ('admin_token', ?)", (secrets.token_urlsafe(24),))
            db.execute("INSERT INTO meta VALUES ('items_sha256', ?)", (items_sha256,))
            for name, items in zip(names, assignments, strict=True):
                token = secrets.token_urlsafe(24)
                cursor = db.execute("INSERT INTO annotators (name, token) VALUES (?, ?)", (name, token))
                db.executemany(
                    "INSERT INTO assignments VALUES (?, ?, ?, ?)",
                    [(cursor.lastrowid, n, study, key) for n, (study, key) in enumerate(items, start=1)],
                )

    def items_sha256(self, current: str) -> str:
        """The digest of the items the study started with; a study started before it was recorded takes
        ``current`` (recorded now: its earlier sheets are unknown)."""
        with self._transaction() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'items_sha256'").fetchone()
            if row is None:
                db.execute("INSERT INTO meta VALUES ('items_sha256', ?)", (current,))
            return current if row is None else row[0]

    def admin_token(self) -> str:
        """The admin link's token."""
        with self._connect() as db:
            return db.execute("SELECT value FROM meta WHERE key = 'admin_token'").fetchone()[0]

    def annotators(self) -> list[Annotator]:
        """Everyone, in creation order."""
        with self._connect() as db:
            rows = db.execute("SELECT id, name, token, submitted_at FROM annotators ORDER BY id").fetchall()
        return [Annotator(i, name, token, submitted is not None) for i, name, token, submitted in rows]

    def find(self, token: str) -> Annotator | None:
        """The annotator of a link token, comparing every stored token in constant time."""
        found = [a for a in self.annotators() if hmac.compare_digest(a.token.encode(), token.encode())]
        return found[-1] if found else None

    def is_admin(self, token: str) -> bool:
        """Whether ``token`` is the admin token (constant-time comparison)."""
        return hmac.compare_digest(self.admin_token().encode(), token.encode())

    def assignments(self, annotator: int) -> list[Assignment]:
        """An annotator's items in order."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT position, study, item FROM assignments WHERE annotator = ? ORDER BY position", (annotator,)
            ).fetchall()
        return [Assignment(*row) for row in rows]

    def all_assignments(self) -> dict[int, list[Assignment]]:
        """Everyone's items."""
        with self._connect() as db:
            rows = db.execute("SELECT annotator, position, study, item FROM assignments ORDER BY 1, 2").fetchall()
        out: dict[int, list[Assignment]] = {}
        for annotator, *rest in rows:
            out.setdefault(annotator, []).append(Assignment(*rest))
        return out

    def answers(self, annotator: int) -> dict[tuple[str, str], dict[str, Any]]:
        """An annotator's answers by (study, item)."""
        with self._connect() as db:
            rows = db.execute("SELECT study, item, value FROM answers WHERE annotator = ?", (annotator,)).fetchall()
        return {(study, item): json.loads(value) for study, item, value in rows}

    def save(self, annotator: int, study: str, item: str, value: dict[str, Any]) -> bool:
        """Store (or revise) one answer; False when the annotator has already submitted."""
        with self._transaction() as db:
            submitted = db.execute("SELECT submitted_at FROM annotators WHERE id = ?", (annotator,)).fetchone()[0]
            if submitted is not None:
                return False
            db.execute(
                "INSERT INTO answers VALUES (?, ?, ?, ?, ?) ON CONFLICT (annotator, study, item) "
                "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (annotator, study, item, json.dumps(value, ensure_ascii=False), time.time()),
            )
        return True

    def submit(self, annotator: int) -> None:
        """Close an annotator's work: answers can no longer be revised."""
        with self._transaction() as db:
            db.execute(
                "UPDATE annotators SET submitted_at = ? WHERE id = ? AND submitted_at IS NULL", (time.time(), annotator)
            )
