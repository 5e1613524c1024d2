"""The gateway API (FastAPI): backends, decisions, request profiles, budgets, /metrics.

Every error is JSON `{"error": "...", ...}` with a 4xx status: 401 without a valid bearer
token, 403 for another tenant's data, 404 for an unknown path, 422 for a malformed body or
query, 503 while the first snapshot is still being taken.
"""
# no `from __future__ import annotations`: FastAPI reads the endpoint annotations at runtime,
# and the ones naming `Caller` (defined inside create_app) must be real objects

import asyncio
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from starlette.exceptions import HTTPException as StarletteHTTPException

from gpupact import __version__
from gpupact.ledger.profiles import summarise
from gpupact.serve.auth import Principal
from gpupact.serve.decisions import Request as DecisionInput
from gpupact.serve.decisions import decide
from gpupact.serve.snapshot import Snapshot
from gpupact.serve.state import ServeState

Name = Annotated[str, Field(min_length=1, max_length=253)]


def _number_not_text(value: Any) -> Any:
    """JSON numbers only: lax pydantic would take "5" or true for a number, a JSON Schema
    validator would not (5.0 stays fine for an integer, as JSON Schema has it)."""
    if isinstance(value, str | bool):
        raise ValueError("expected a JSON number")
    return value


Integer = Annotated[int, BeforeValidator(_number_not_text)]
Seconds = Annotated[float, Field(gt=0, le=10**9), BeforeValidator(_number_not_text)]


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        self.status, self.message = status, message


class ErrorBody(BaseModel):
    error: str
    details: list[dict[str, Any]] | None = None


class BackendOut(BaseModel):
    service: str
    model: str
    tenant: str | None
    pool: str | None
    desired: int
    ready: int
    pending: int
    pendingReason: str | None
    queueLength: float | None
    kvCacheUse: float | None
    healthy: bool
    coldStartSeconds: float | None = Field(description="expected seconds until new capacity")
    ttftP99Seconds: float | None


class BackendsOut(BaseModel):
    at: str
    backends: list[BackendOut]


class DecisionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tenant: Name
    model: Name
    contextTokens: Integer = Field(ge=0, le=100_000_000)
    priority: Literal["high", "normal", "low"] = "normal"
    risk: Literal["low", "medium", "high"] = "medium"


class DecisionOut(BaseModel):
    outcome: Literal["admit", "queue", "degrade", "reject", "reroute"]
    tenant: str
    model: str = Field(description="the model that serves it (the smaller one on degrade)")
    requestedModel: str
    backend: str | None
    retryAfterSeconds: float | None
    reason: str | None
    at: str


class DecisionsOut(BaseModel):
    decisions: list[DecisionOut]


class Bucket(BaseModel):
    model_config = ConfigDict(extra="forbid")
    le: Integer = Field(ge=1, le=100_000_000, description="upper bound in tokens (inclusive)")
    count: Integer = Field(ge=0, le=10**12, description="requests above the previous bound")


def _merged(buckets: list[Bucket]) -> list[Bucket]:
    """Buckets by bound, counts of a repeated bound added (the gateway may send them in any
    order)."""
    counts: dict[int, int] = {}
    for b in buckets:
        counts[b.le] = counts.get(b.le, 0) + b.count
    return [Bucket(le=le, count=n) for le, n in sorted(counts.items())]


class ProfileIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tenant: Name
    model: Name
    windowSeconds: Seconds | None = None
    inputTokens: list[Bucket] = Field(max_length=256)
    outputTokens: list[Bucket] = Field(default_factory=list, max_length=256)

    @model_validator(mode="after")
    def _sorted(self) -> "ProfileIn":
        self.inputTokens = _merged(self.inputTokens)
        self.outputTokens = _merged(self.outputTokens)
        return self


class ProfileOut(BaseModel):
    id: int
    tenant: str
    model: str
    received: str


class ProfilesOut(BaseModel):
    profiles: list[dict[str, Any]]


class TokenPercentiles(BaseModel):
    p50: int
    p95: int
    p99: int


class ProfileSummary(BaseModel):
    model: str
    profiles: int
    requests: int
    inputTokens: TokenPercentiles | None
    outputTokens: TokenPercentiles | None
    planFlags: str = Field(description="the same percentiles as `gpupact plan` options")


class ProfileSummariesOut(BaseModel):
    summaries: list[ProfileSummary]


class BudgetOut(BaseModel):
    tenant: str
    month: str
    gpuHourBudget: float | None
    usedGpuHours: float
    remainingGpuHours: float | None
    gpusHeld: float
    quotaGpus: float | None


ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "a body that is not JSON text"},
    401: {"model": ErrorBody, "description": "no or unknown bearer token"},
    403: {"model": ErrorBody, "description": "another tenant's data"},
    422: {"model": ErrorBody, "description": "malformed request"},
    503: {"model": ErrorBody, "description": "no snapshot yet"},
}


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def create_app(state: ServeState) -> FastAPI:
    bearer = HTTPBearer(auto_error=False)
    # Endpoints that only read the in-memory snapshot are `async`: run on the event loop,
    # not handed to the thread pool (two thread hops a request would cost more than the
    # decision). Those touching the ledger's database stay plain functions (thread pool).

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        task = None
        if state.refresh_seconds is not None:
            await asyncio.to_thread(state.refresh)

            async def loop() -> None:
                while True:
                    await asyncio.sleep(state.refresh_seconds or 1.0)
                    await asyncio.to_thread(state.refresh)

            task = asyncio.create_task(loop())
        yield
        if task is not None:
            task.cancel()

    app = FastAPI(
        title="gpupact gateway API",
        version=__version__,
        description="Backend capacity and admission decisions for the model gateway (43.6).",
        lifespan=lifespan,
    )
    app.state.serve = state

    async def principal(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Principal:
        if credentials is None or credentials.scheme.lower() != "bearer":
            raise ApiError(401, "missing bearer token")
        who = state.tokens.lookup(credentials.credentials)
        if who is None:
            raise ApiError(401, "unknown token")
        return who

    Caller = Annotated[Principal, Depends(principal)]

    def snapshot() -> Snapshot:
        snap = state.snapshot
        if snap is None:
            raise ApiError(503, "no snapshot of the backends yet")
        return snap

    def known_query(*names: str) -> Any:
        async def check(request: Request) -> None:
            unknown = sorted(set(request.query_params) - set(names))
            if unknown:
                raise ApiError(422, f"unknown query parameter {unknown[0]!r}")

        return Depends(check)

    def allowed(who: Principal, tenant: str) -> None:
        if not who.may_see(tenant):
            raise ApiError(403, f"token of tenant {who.tenant} may not act for tenant {tenant}")

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, err: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if err.status == 401 else None
        return JSONResponse({"error": err.message}, err.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, err: RequestValidationError) -> JSONResponse:
        details = [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))}
            for e in err.errors()
        ]
        return JSONResponse({"error": "invalid request", "details": details}, 422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, err: StarletteHTTPException) -> JSONResponse:
        headers = dict(err.headers or {})
        if err.status_code == 405:
            # Starlette's Allow names the methods of one route; a path served by several
            # routes (GET and POST /v1/decisions) allows all of theirs
            path = request.url.path
            methods = {
                m
                for r in app.routes
                if isinstance(r, APIRoute) and r.path_regex.match(path)
                for m in r.methods
            }
            headers["Allow"] = ", ".join(sorted(methods))
        return JSONResponse({"error": str(err.detail)}, err.status_code, headers=headers)

    @app.get("/healthz", responses={503: ERRORS[503]})
    async def healthz() -> dict[str, str]:
        snap = snapshot()
        return {"status": "ok", "at": _iso(snap.at)}

    @app.get("/v1/backends", response_model=BackendsOut, responses=ERRORS)
    async def backends(who: Caller) -> dict[str, Any]:
        """Per model backend: replicas desired / ready / Pending (and why), queue length and
        KV-cache use when known, health, expected seconds until new capacity (cold start).
        A tenant sees its own backends and shared ones (no tenant)."""
        snap = snapshot()
        shown = [b.to_dict() for b in snap.backends if b.tenant is None or who.may_see(b.tenant)]
        return {"at": _iso(snap.at), "backends": shown}

    @app.post("/v1/decisions", response_model=DecisionOut, responses=ERRORS)
    async def decisions(body: DecisionIn, who: Caller, response: Response) -> dict[str, Any]:
        """Admit, queue (retry after), degrade (to a named smaller model), reject (reason) or
        reroute one request, from the tenant's budget and quota, backend saturation and the
        model's context limit."""
        allowed(who, body.tenant)
        snap = snapshot()
        req = DecisionInput(body.tenant, body.model, body.contextTokens, body.priority, body.risk)
        d = decide(req, snap, state.policy)
        out = {
            "outcome": d.outcome,
            "tenant": body.tenant,
            "model": d.model,
            "requestedModel": body.model,
            "backend": d.backend,
            "retryAfterSeconds": d.retry_after_seconds,
            "reason": d.reason,
            "at": _iso(snap.at),
        }
        if d.retry_after_seconds is not None:
            response.headers["Retry-After"] = str(max(1, math.ceil(d.retry_after_seconds)))
        state.decisions.append(out)
        state.decision_counter.labels(body.tenant, d.outcome).inc()
        return out

    @app.get(
        "/v1/decisions",
        response_model=DecisionsOut,
        responses=ERRORS,
        dependencies=[known_query("tenant", "limit")],
    )
    async def recent_decisions(
        who: Caller,
        tenant: Annotated[str | None, Query(max_length=253)] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> dict[str, Any]:
        """The latest decisions, newest first: a tenant's own, or any tenant's for an admin."""
        if tenant is not None:
            allowed(who, tenant)
        picked = []
        for d in reversed(state.decisions):
            if who.may_see(d["tenant"]) and (tenant is None or d["tenant"] == tenant):
                picked.append(d)
                if len(picked) >= limit:
                    break
        return {"decisions": picked}

    @app.get("/v1/tenants/{tenant}/budget", response_model=BudgetOut, responses=ERRORS)
    async def budget(tenant: Annotated[str, Field(max_length=253)], who: Caller) -> dict[str, Any]:
        """The tenant's GPU-hour budget for the current month, what is used, GPUs held now."""
        allowed(who, tenant)
        snap = snapshot()
        assert snap.month is not None
        limit = state.policy.budgets.get(tenant)
        used = snap.tenant_month_hours.get(tenant, 0.0)
        held = sum(g for (t, _), g in snap.tenant_gpus.items() if t == tenant)
        quotas = [q for (t, _), q in state.policy.quotas.items() if t == tenant]
        return {
            "tenant": tenant,
            "month": snap.month.label,
            "gpuHourBudget": limit,
            "usedGpuHours": round(used, 6),
            "remainingGpuHours": None if limit is None else round(max(0.0, limit - used), 6),
            "gpusHeld": held,
            "quotaGpus": sum(quotas) if quotas else None,
        }

    @app.post("/v1/profiles", status_code=201, response_model=ProfileOut, responses=ERRORS)
    def add_profile(body: ProfileIn, who: Caller) -> dict[str, Any]:
        """A request-token histogram from the gateway, stored for capacity planning."""
        allowed(who, body.tenant)
        received = state.clock()
        stored = body.model_dump(exclude={"tenant", "model"})
        pid = state.ledger.add_profile(body.tenant, body.model, received, stored)
        return {"id": pid, "tenant": body.tenant, "model": body.model, "received": _iso(received)}

    @app.get(
        "/v1/profiles",
        response_model=ProfilesOut,
        responses=ERRORS,
        dependencies=[known_query("model")],
    )
    def profiles(
        who: Caller,
        model: Annotated[str | None, Query(max_length=253)] = None,
    ) -> dict[str, Any]:
        """Stored request profiles: a tenant's own, every tenant's for an admin."""
        return {"profiles": state.ledger.profiles(tenant=who.tenant, model=model)}

    @app.get(
        "/v1/profiles/summary",
        response_model=ProfileSummariesOut,
        responses=ERRORS,
        dependencies=[known_query("model")],
    )
    def profile_summary(
        who: Caller,
        model: Annotated[str | None, Query(max_length=253)] = None,
    ) -> dict[str, Any]:
        """Stored profiles added up per model: token percentiles for capacity planning."""
        return {"summaries": summarise(state.ledger.profiles(tenant=who.tenant, model=model))}

    @app.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
    async def metrics() -> Response:
        """Prometheus text format (no token: scraped on the cluster network)."""
        return Response(generate_latest(state.registry), media_type=CONTENT_TYPE_LATEST)

    return app
