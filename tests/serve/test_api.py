"""The HTTP API in-process: auth, tenant isolation, each endpoint, JSON errors."""

from __future__ import annotations

import pytest
from fake_twin import FakeSimulation
from fastapi.testclient import TestClient
from serve_helpers import TOKENS, auth

from gpupact.serve import create_app

DECIDE = {"tenant": "search", "model": "qwen-72b", "contextTokens": 2000}


def test_requests_without_a_valid_token_are_401_json(client) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic eDp5"}):
        r = client.get("/v1/backends", headers=headers)
        assert r.status_code == 401 and "error" in r.json()


def test_backends_show_capacity_and_a_tenant_sees_its_own_and_shared(client) -> None:
    admin = client.get("/v1/backends", headers=auth("admin")).json()
    assert [b["service"] for b in admin["backends"]] == ["chat-search", "chat-ads", "mini"]
    first = admin["backends"][0]
    assert (first["desired"], first["ready"], first["coldStartSeconds"]) == (4, 4, 360.0)
    assert admin["at"] == "2026-11-10T00:00:00Z"
    mine = client.get("/v1/backends", headers=auth("search")).json()
    assert [b["service"] for b in mine["backends"]] == ["chat-search", "mini"]


def test_a_tenant_token_cannot_act_or_read_for_another_tenant(client) -> None:
    assert (
        client.post(
            "/v1/decisions", json={**DECIDE, "tenant": "ads"}, headers=auth("search")
        ).status_code
        == 403
    )
    assert client.get("/v1/tenants/ads/budget", headers=auth("search")).status_code == 403
    assert client.get("/v1/decisions?tenant=ads", headers=auth("search")).status_code == 403
    profile = {"tenant": "ads", "model": "qwen-72b", "inputTokens": [{"le": 512, "count": 1}]}
    assert client.post("/v1/profiles", json=profile, headers=auth("search")).status_code == 403


def test_decisions_are_recorded_and_each_tenant_sees_only_its_own(client) -> None:
    a = client.post("/v1/decisions", json=DECIDE, headers=auth("search"))
    b = client.post("/v1/decisions", json={**DECIDE, "tenant": "ads"}, headers=auth("ads"))
    assert a.status_code == b.status_code == 200
    assert (a.json()["outcome"], a.json()["backend"]) == ("admit", "chat-search")
    assert [
        d["tenant"] for d in client.get("/v1/decisions", headers=auth("search")).json()["decisions"]
    ] == ["search"]
    assert [
        d["tenant"] for d in client.get("/v1/decisions", headers=auth("ads")).json()["decisions"]
    ] == ["ads"]
    everything = client.get("/v1/decisions", headers=auth("admin")).json()["decisions"]
    assert [d["tenant"] for d in everything] == ["ads", "search"]  # newest first


def test_decisions_follow_the_twin_clock(make_state) -> None:
    sim = FakeSimulation(search_queue_per_hour=1.0, pending=1)
    state = make_state(sim, scale=3600.0)  # one simulated hour per wall second
    with TestClient(create_app(state)) as c:
        assert (
            c.post("/v1/decisions", json=DECIDE, headers=auth("search")).json()["outcome"]
            == "admit"
        )
        state.clock.t += 6  # six simulated hours: search's queue is 6 > 5
        state.refresh()
        r = c.post("/v1/decisions", json=DECIDE, headers=auth("search"))
        assert (r.json()["outcome"], r.json()["backend"]) == ("reroute", "chat-ads")
        sim.overrides["chat-ads"] = {"queueLength": 9}
        state.refresh()
        r = c.post("/v1/decisions", json={**DECIDE, "priority": "low"}, headers=auth("search"))
        assert (r.json()["outcome"], r.json()["retryAfterSeconds"]) == ("queue", 360.0)
        assert r.headers["Retry-After"] == "360"


def test_budget_reads_the_ledger(make_state) -> None:
    state = make_state(budget=100.0, scale=3600.0)
    state.clock.t += 10  # ten simulated hours of 2 GPUs
    state.refresh()
    with TestClient(create_app(state)) as c:
        body = c.get("/v1/tenants/search/budget", headers=auth("search")).json()
        assert body["usedGpuHours"] == pytest.approx(20.0)
        assert body["remainingGpuHours"] == pytest.approx(80.0)
        assert (body["month"], body["gpusHeld"]) == ("2026-11", 2.0)
        assert state.ledger.count() == 2  # the twin's usage is in the ledger
        state.clock.t += 40
        state.refresh()
        r = c.post("/v1/decisions", json=DECIDE, headers=auth("search"))
        assert r.json()["reason"] == "budget-exhausted"
        assert state.ledger.count() == 2  # refreshing records nothing twice


def test_profiles_are_stored_and_read_back_per_tenant(client) -> None:
    body = {
        "tenant": "search",
        "model": "qwen-72b",
        "windowSeconds": 3600,
        "inputTokens": [{"le": 512, "count": 40}, {"le": 4096, "count": 9}],
        "outputTokens": [{"le": 256, "count": 49}],
    }
    r = client.post("/v1/profiles", json=body, headers=auth("search"))
    assert r.status_code == 201 and r.json()["id"] == 1
    (stored,) = client.get("/v1/profiles", headers=auth("search")).json()["profiles"]
    assert stored["inputTokens"] == body["inputTokens"] and stored["windowSeconds"] == 3600
    assert client.get("/v1/profiles", headers=auth("ads")).json()["profiles"] == []
    assert len(client.get("/v1/profiles", headers=auth("admin")).json()["profiles"]) == 1
    unordered = {
        **body,
        "inputTokens": [{"le": 4096, "count": 2}, {"le": 512, "count": 1}, {"le": 512, "count": 3}],
    }
    client.post("/v1/profiles", json=unordered, headers=auth("search"))
    latest = client.get("/v1/profiles", headers=auth("search")).json()["profiles"][-1]
    assert latest["inputTokens"] == [{"le": 512, "count": 4}, {"le": 4096, "count": 2}]


@pytest.mark.parametrize(
    "body",
    [
        {**DECIDE, "contextTokens": -1},
        {**DECIDE, "priority": "urgent"},
        {**DECIDE, "extra": 1},
        {"tenant": "search"},
        [],
    ],
    ids=["negative", "bad-priority", "extra-field", "missing", "not-object"],
)
def test_malformed_decisions_are_422_json(client, body) -> None:
    r = client.post("/v1/decisions", json=body, headers=auth("search"))
    assert r.status_code == 422 and r.json()["error"] == "invalid request"


def test_malformed_json_and_unknown_paths_are_4xx_json(client) -> None:
    r = client.post(
        "/v1/decisions",
        content=b"{nope",
        headers={**auth("search"), "Content-Type": "application/json"},
    )
    assert r.status_code == 422 and "error" in r.json()
    r = client.get("/v2/nothing", headers=auth("search"))
    assert r.status_code == 404 and r.json() == {"error": "Not Found"}
    r = client.post("/v1/decisions", json={**DECIDE, "contextTokens": "5"}, headers=auth("search"))
    assert r.status_code == 422  # a number, not text that looks like one
    r = client.get("/v1/decisions?colour=red", headers=auth("search"))
    assert r.status_code == 422 and r.json()["error"] == "unknown query parameter 'colour'"


def test_metrics_carry_the_chapter_s_families(client) -> None:
    client.post("/v1/decisions", json=DECIDE, headers=auth("search"))
    text = client.get("/metrics").text
    assert 'gpupact_pod_pending_seconds_bucket{le="30.0",workload_class="online-infer"} 1.0' in text
    assert 'gpupact_pod_pending_seconds_count{workload_class="batch"} 1.0' in text
    assert 'gpupact_quota_used_gpus{pool="gpu-inference",tenant="search"} 2.0' in text
    assert 'gpupact_backend_ttft_p99_seconds{model="qwen-72b",service="chat-search"} 0.8' in text
    assert 'gpupact_decisions_total{outcome="admit",tenant="search"} 1.0' in text
    assert "gpupact_podgroups_blocked 2.0" in text  # the twin's own count (fake_twin.blocked)
    assert "gpupact_kueue_workloads_blocked 5.0" in text
    for family in (
        "gpupact_gpu_hours_total",
        "gpupact_podgroups_blocked",
        "gpupact_kueue_workloads_blocked",
        "gpupact_nodes_gpu_capacity_lost",
        'gpupact_backend_replicas{model="qwen-72b",service="chat-search",state="ready"} 4.0',
    ):
        assert family in text


def test_no_snapshot_yet_is_503(make_state) -> None:
    state = make_state()
    state.snapshot = None
    with TestClient(create_app(state)) as c:
        r = c.post("/v1/decisions", json=DECIDE, headers=auth("search"))
        assert r.status_code == 503 and "error" in r.json()


def test_tokens_are_not_echoed(client) -> None:
    r = client.get("/v1/backends", headers=auth("search"))
    assert TOKENS["search"] not in r.text


def test_profile_summary_gives_plan_percentiles(client) -> None:
    for counts in ([50, 40, 10], [50, 45, 5]):
        body = {
            "tenant": "search",
            "model": "qwen-72b",
            "inputTokens": [
                {"le": le, "count": n} for le, n in zip((512, 4096, 32768), counts, strict=True)
            ],
            "outputTokens": [{"le": 256, "count": 100}],
        }
        assert client.post("/v1/profiles", json=body, headers=auth("search")).status_code == 201
    (summary,) = client.get("/v1/profiles/summary", headers=auth("search")).json()["summaries"]
    # 200 requests: 100 <= 512, 85 more <= 4096, 15 more <= 32768
    assert summary["requests"] == 200 and summary["profiles"] == 2
    assert summary["inputTokens"] == {"p50": 512, "p95": 32768, "p99": 32768}
    assert summary["planFlags"] == (
        "--input-p50 512 --input-p95 32768 --output-p50 256 --output-p95 256"
    )
    assert client.get("/v1/profiles/summary", headers=auth("ads")).json()["summaries"] == []
