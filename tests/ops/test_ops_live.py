"""The live path: the real Kubernetes client against a local API server stand-in (stdlib
http.server on 127.0.0.1, random port) serving a fixture through the list endpoints, with a
generated kubeconfig. Read-only: every request must be a GET."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import yaml
from ops_helpers import NOW, NOW_TEXT, fixture, run

pytest.importorskip("kubernetes")

from gpupact.errors import InputError
from gpupact.ops import (
    Analysis,
    audit,
    diagnose,
    live,
    load_snapshot_dir,
)

PLURALS = {(r.group, r.kind): r.plural for r in live.RESOURCES}
TOKEN = "gpupact-test-token"


def _routes(folder: Path) -> dict[str, list[dict[str, Any]]]:
    routes: dict[str, list[dict[str, Any]]] = {}
    for file in sorted(folder.glob("*.json")):
        for obj in json.loads(file.read_text())["items"]:
            api = obj["apiVersion"]
            group, _, version = api.rpartition("/")
            plural = PLURALS.get((group, obj["kind"]))
            if plural is None:
                continue
            path = f"/api/{version}/{plural}" if not group else f"/apis/{group}/{version}/{plural}"
            item = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
            routes.setdefault(path, []).append(item)
    return routes


class FakeApiServer:
    """Serves list endpoints with paging (limit / continue), 404 for any other path, 403 for
    the paths in `forbidden`; records every request."""

    def __init__(self, folder: Path, forbidden: tuple[str, ...] = ()) -> None:
        self.routes = _routes(folder)
        self.forbidden = forbidden
        self.requests: list[tuple[str, str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                url = urlparse(self.path)
                server.requests.append(("GET", url.path, self.headers.get("Authorization", "")))
                if url.path in server.forbidden:
                    self._answer(
                        403,
                        {"kind": "Status", "status": "Failure", "reason": "Forbidden", "code": 403},
                    )
                    return
                if url.path not in server.routes:
                    self._answer(
                        404,
                        {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404},
                    )
                    return
                query = parse_qs(url.query)
                limit = int(query.get("limit", ["0"])[0]) or 10**9
                start = int(query.get("continue", ["0"])[0] or 0)
                items = server.routes[url.path][start : start + limit]
                meta: dict[str, Any] = {"resourceVersion": "4242"}
                if start + limit < len(server.routes[url.path]):
                    meta["continue"] = str(start + limit)
                kind = url.path.rsplit("/", 1)[-1]
                self._answer(
                    200,
                    {"kind": f"{kind}List", "apiVersion": "v1", "metadata": meta, "items": items},
                )

            def _refuse(self) -> None:
                server.requests.append((self.command, self.path, ""))
                self._answer(405, {"kind": "Status", "code": 405})

            do_POST = do_PUT = do_PATCH = do_DELETE = _refuse

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeApiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def kubeconfig(self, tmp_path: Path) -> Path:
        path = tmp_path / "kubeconfig"
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {"name": "fake", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}
                    ],
                    "users": [{"name": "reader", "user": {"token": TOKEN}}],
                    "contexts": [
                        {"name": "fake", "context": {"cluster": "fake", "user": "reader"}}
                    ],
                    "current-context": "fake",
                }
            )
        )
        return path


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(live, "PAGE_SIZE", 4)  # several pages per kind: `continue` is followed
    yield


@pytest.mark.parametrize("name", ["gang-half-started", "quota-exhausted", "autoscaler-cold-start"])
def test_live_equals_snapshot(name: str, tmp_path: Path, small_pages: None) -> None:
    with FakeApiServer(fixture(name)) as server:
        snap = live.load_live("fake", str(server.kubeconfig(tmp_path)))
        methods = {m for m, _, _ in server.requests}
        auth = {a for _, _, a in server.requests}
        paths = [p for _, p, _ in server.requests]
    assert methods == {"GET"}
    assert auth == {f"Bearer {TOKEN}"}
    assert "/apis/kueue.x-k8s.io/v1beta2/workloads" in paths  # tried first, 404
    assert "/apis/kueue.x-k8s.io/v1beta1/workloads" in paths  # then the served version
    offline = load_snapshot_dir(fixture(name))
    assert snap.counts() == offline.counts()
    got = diagnose(Analysis(snap, now=NOW)).to_dict()["diagnoses"]
    want = diagnose(Analysis(offline, now=NOW)).to_dict()["diagnoses"]
    assert got == want
    assert (
        audit(Analysis(snap, now=NOW)).to_dict()["findings"]
        == audit(Analysis(offline, now=NOW)).to_dict()["findings"]
    )


def test_cli_context(tmp_path: Path) -> None:
    with FakeApiServer(fixture("fragmentation")) as server:
        config = server.kubeconfig(tmp_path)
        code, out, err = run(
            "diagnose", "-A", "--context", "fake", "--kubeconfig", str(config), "--now", NOW_TEXT
        )
    assert code == 1, err
    assert "gpu-fragmentation" in out


def test_forbidden_optional_kind_is_skipped(tmp_path: Path) -> None:
    with FakeApiServer(fixture("healthy"), forbidden=("/api/v1/events",)) as server:
        snap = live.load_live("fake", str(server.kubeconfig(tmp_path)))
    assert snap.events == []
    assert any(k.startswith("forbidden events.core") for k in snap.ignored)


def test_forbidden_pods_is_bad_input(tmp_path: Path) -> None:
    with (
        FakeApiServer(fixture("healthy"), forbidden=("/api/v1/pods",)) as server,
        pytest.raises(InputError, match="listing pods: HTTP 403"),
    ):
        live.load_live("fake", str(server.kubeconfig(tmp_path)))


def test_unknown_context(tmp_path: Path) -> None:
    with FakeApiServer(fixture("healthy")) as server:
        config = server.kubeconfig(tmp_path)
        with pytest.raises(InputError, match="kubeconfig"):
            live.load_live("nope", str(config))


def test_unreachable_server(tmp_path: Path) -> None:
    with FakeApiServer(fixture("healthy")) as server:
        config = server.kubeconfig(tmp_path)
    # the server is gone now
    with pytest.raises(InputError, match="cannot reach the API server"):
        live.load_live("fake", str(config))


# --- servers that misbehave: every one is bad input, none hangs or reads as an empty cluster ---


class OddServer:
    """An HTTP server on 127.0.0.1 answering every GET with `answer(path, query)` ->
    (status, content type, body bytes)."""

    def __init__(self, answer) -> None:
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                url = urlparse(self.path)
                server.requests.append(self.path)
                status, kind, body = answer(url.path, parse_qs(url.query))
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> OddServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _kubeconfig(tmp_path: Path, port: int, name: str = "kubeconfig") -> Path:
    path = tmp_path / name
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": TOKEN}}],
                "contexts": [{"name": "odd", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "odd",
            }
        )
    )
    return path


def _load_guarded(context: str | None, kubeconfig: str | None) -> BaseException | None:
    """load_live in a thread joined with a generous guard: a hang fails the test instead of
    holding the suite (the guard is not a speed assertion)."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            live.load_live(context, kubeconfig)
            outcome.append(None)
        except BaseException as err:
            outcome.append(err)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "load_live hung"
    return outcome[0]


@pytest.fixture
def short_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "CONNECT_TIMEOUT", 0.5)
    monkeypatch.setattr(live, "READ_TIMEOUT", 0.5)


def test_a_black_holed_server_times_out_on_read(tmp_path: Path, short_timeouts: None) -> None:
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(8)  # connections complete in the kernel; nothing ever answers
    try:
        err = _load_guarded("odd", str(_kubeconfig(tmp_path, hole.getsockname()[1])))
    finally:
        hole.close()
    assert isinstance(err, InputError) and "cannot reach the API server" in str(err), err


def test_a_server_that_never_accepts_times_out_on_connect(
    tmp_path: Path, short_timeouts: None
) -> None:
    full = socket.socket()
    full.bind(("127.0.0.1", 0))
    full.listen(0)
    port = full.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port))  # fills the backlog: SYNs dropped
    try:
        err = _load_guarded("odd", str(_kubeconfig(tmp_path, port)))
    finally:
        filler.close()
        full.close()
    assert isinstance(err, InputError) and "cannot reach the API server" in str(err), err


def test_a_server_that_404s_everything_is_not_an_empty_cluster(tmp_path: Path) -> None:
    with OddServer(lambda path, q: (404, "application/json", b'{"kind":"Status"}')) as server:
        err = _load_guarded("odd", str(_kubeconfig(tmp_path, server.port)))
    assert isinstance(err, InputError), err
    assert "/api/v1/nodes is not served (HTTP 404)" in str(err)
    assert "Kubernetes API server" in str(err)


@pytest.mark.parametrize(
    "body", [b"<html>login</html>", b"", b'"just a string"', b'{"items": 3}', b'{"kind": "x"}']
)
def test_a_200_that_is_not_a_json_list_is_an_error(tmp_path: Path, body: bytes) -> None:
    with OddServer(lambda path, q: (200, "text/html", body)) as server:
        err = _load_guarded("odd", str(_kubeconfig(tmp_path, server.port)))
    assert isinstance(err, InputError), err
    assert "/api/v1/nodes" in str(err)


def test_endless_pages_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "MAX_PAGES", 5)

    def answer(path: str, query: dict) -> tuple[int, str, bytes]:
        page = int(query.get("continue", ["0"])[0]) + 1
        body = {"kind": "List", "metadata": {"continue": str(page)}, "items": []}
        return 200, "application/json", json.dumps(body).encode()

    with OddServer(answer) as server:
        err = _load_guarded("odd", str(_kubeconfig(tmp_path, server.port)))
        pages = len(server.requests)
    assert isinstance(err, InputError) and "more than 5 pages" in str(err), err
    assert pages == 5


def test_a_repeated_continue_token_stops_at_once(tmp_path: Path) -> None:
    body = json.dumps({"kind": "List", "metadata": {"continue": "same"}, "items": []}).encode()
    with OddServer(lambda path, q: (200, "application/json", body)) as server:
        err = _load_guarded("odd", str(_kubeconfig(tmp_path, server.port)))
        pages = len(server.requests)
    assert isinstance(err, InputError) and "repeats its continue token" in str(err), err
    assert pages == 2


def test_kubeconfig_env_and_current_context_are_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeApiServer(fixture("healthy")) as server:
        config = server.kubeconfig(tmp_path)
        # a list of files, as kubectl merges them; the first does not exist
        monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "none"), str(config)]))
        code, out, err = run("diagnose", "-A", "--now", NOW_TEXT)
        seen = {p for _, p, _ in server.requests}
    assert code == 0, err
    assert "/api/v1/nodes" in seen and "nothing pending" in out


def test_no_kubeconfig_anywhere_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code, _, err = run("audit")
    assert code == 2 and err.startswith("error: no cluster: no kubeconfig at"), err


def test_the_kubeconfig_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes import config as kube_config

    calls: list[dict[str, Any]] = []
    real = kube_config.load_kube_config

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(kube_config, "load_kube_config", spy)
    with FakeApiServer(fixture("healthy")) as server:
        config = server.kubeconfig(tmp_path)
        before = config.read_bytes()
        live.load_live("fake", str(config))
    assert calls and all(c.get("persist_config") is False for c in calls)
    assert config.read_bytes() == before


def test_a_kubeconfig_that_never_ends_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", "/dev/zero")
    code, _, err = run("diagnose", "-A")
    assert code == 2 and "/dev/zero: not a regular file" in err, err
