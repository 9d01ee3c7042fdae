"""Set a study up (annotators, links, assignments) and serve it with uvicorn."""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import json
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ccpt.errors import DataError
from ccpt.human.app.app import create_app
from ccpt.human.app.assign import assign
from ccpt.human.app.store import DB_NAME, Store
from ccpt.human.app.studies import Study, load_study

DEFAULT_HOST = "127.0.0.1"
MAX_CONNECTIONS = 64  # open connections at once: a study has tens of annotators
HEADER_SECONDS = 10.0  # a connection whose request headers have not all arrived by then is closed


class BoundedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol (h11) with a deadline on every request's headers: 64 connections stalled after
    a request line would keep every annotator on 503. Named explicitly, it also keeps ``h11_max_incomplete_event_size``
    in force (uvicorn's default httptools ignores it)."""

    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(HEADER_SECONDS, self.transport.close)  # a no-op once closing

    def _disarm(self) -> None:
        if self._header_timer is not None:  # cancelling a timer that has fired or was cancelled is a no-op
            self._header_timer.cancel()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is not None and not self.cycle.response_complete:  # the headers are in: the app has it
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():  # the next request's headers get the same deadline
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


@dataclass(frozen=True)
class Prepared:
    """A study ready to serve: its items, its database, and the people's link tokens."""

    study: Study
    store: Store
    links: tuple[tuple[str, str], ...]  # (name, token) per annotator
    admin_token: str


def read_names(path: Path) -> list[str]:
    """Annotator names, one per line (blank lines and ``#`` comments ignored)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read names file {path} ({exc})") from exc
    names = [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]
    if not names or len(set(names)) != len(names):
        raise DataError(f"{path}: needs at least one name per line, all distinct")
    return names


def prepare(
    study_dir: Path, names: Sequence[str] | None, rating_overlap: int | None = None, *, create: bool = True
) -> Prepared:
    """Load the sheets and open (or, with ``create``, create) the study database: the first run creates annotators,
    tokens and assignments; later runs reuse them and refuse other annotators or changed sheets (checks first)."""
    study = load_study(study_dir, rating_overlap=rating_overlap)
    # What every item shows: a sheet exported again with other pairs under the same ids (every export numbers its
    # pairs and HITs alike) would attach the stored answers to other items.
    shown = sorted((i.study, i.key, sorted(i.fields.items())) for i in study.items)
    digest = hashlib.sha256(json.dumps(shown, ensure_ascii=False).encode()).hexdigest()
    path = study_dir / DB_NAME
    if not path.exists() and not create:
        raise DataError(f"no study database in {study_dir}", "start the study with ccpt human serve first")
    if not path.exists() or not Store(path).initialised():
        if not names:
            raise DataError("a new study needs its annotators", "pass --annotators N or --names FILE")
        per_person = assign(study.items, len(names))
        store = Store(path)
        store.initialise(names, [[(i.study, i.key) for i in items] for items in per_person], digest)
    else:
        store = Store(path)
        stored = [a.name for a in store.annotators()]
        if names and list(names) != stored:
            raise DataError(
                f"{study_dir / DB_NAME} already has annotators {', '.join(stored)}",
                "leave out --annotators/--names to reuse them, or start a new study directory",
            )
        known = {(i.study, i.key) for i in study.items}
        assigned = {(a.study, a.item) for rows in store.all_assignments().values() for a in rows}
        if assigned - known or known - assigned:
            raise DataError(
                f"{study_dir}: the sheets no longer match the study database "
                f"({len(assigned - known)} assigned item(s) missing, {len(known - assigned)} new)",
                "restore the exported sheets, or start a new study directory",
            )
        if store.items_sha256(digest) != digest:
            raise DataError(
                f"{study_dir}: the sheets show other items than when the study started, under the same ids "
                "(exported again?): the stored answers would count for other items",
                "restore the exported sheets, or start a new study directory",
            )
    links = tuple((a.name, a.token) for a in store.annotators())
    return Prepared(study, store, links, store.admin_token())


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable only from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_host(host: str) -> str:
    """``host`` if it names an address; an empty one would bind every interface without saying so."""
    if not host.strip():
        raise DataError(
            "--host is empty, which would listen on every network interface",
            "pass 127.0.0.1 (this machine only), or 0.0.0.0 / :: to listen on all interfaces on purpose",
        )
    return host.strip()


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (``port=0``: any free port); a DataError names a port already in use."""
    host = check_host(host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise DataError(f"cannot listen on {host}:{port} ({exc.strerror})", "choose another --port") from exc
    sock.listen(128)
    return sock


class Server:
    """uvicorn on a bound socket; :meth:`run` blocks, :meth:`start`/:meth:`stop` run it in a thread."""

    def __init__(self, prepared: Prepared, host: str = DEFAULT_HOST, port: int = 0) -> None:
        self.prepared = prepared
        self.host = host
        self.socket = bind(host, port)
        self.port = self.socket.getsockname()[1]
        config = uvicorn.Config(
            create_app(prepared.study, prepared.store),
            log_level="warning",
            access_log=False,  # an access log would print every secret link
            server_header=False,
            http=BoundedH11Protocol,
            h11_max_incomplete_event_size=16 * 1024,
            limit_concurrency=MAX_CONNECTIONS,  # beyond it uvicorn answers 503 instead of queueing forever
            timeout_keep_alive=5,
        )
        self.server = uvicorn.Server(config)
        self.thread: threading.Thread | None = None

    def url(self, path: str = "/") -> str:
        """A URL on this server (IPv6 hosts bracketed)."""
        return f"http://{f'[{self.host}]' if ':' in self.host else self.host}:{self.port}{path}"

    def links(self) -> list[tuple[str, str]]:
        """(name, link) per annotator, then ("admin", link)."""
        people = [(name, self.url(f"/a/{token}/")) for name, token in self.prepared.links]
        return [*people, ("admin", self.url(f"/admin/{self.prepared.admin_token}/"))]

    def run(self) -> None:
        """Serve until interrupted."""
        self.server.run(sockets=[self.socket])

    def start(self) -> Server:
        """Serve in a background thread (tests, screenshots); returns once it accepts requests."""
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the study server stopped while starting")
            threading.Event().wait(0.02)
        return self

    def stop(self) -> None:
        """Stop the background server and close its socket."""
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=10)
        self.socket.close()

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
