"""Gateway decisions per second and latency: `POST /v1/decisions` on loopback against a real
uvicorn server (target: >= 2,000 decisions/s with p99 < 20 ms on 2 cores).

The server is this script in `--serve PORT` mode, in its own process: one uvicorn worker
(the API holds its snapshot in process), access log off, backed by a fixed snapshot of 40
backends (20 models, 2 services each; some saturated so every outcome is exercised) and a
budget per tenant. The load is `wrk` (Debian package `wrk`) with a Lua script cycling through
request bodies of 10 tenants, models and priorities, `--connections` open connections for
`--duration` seconds after a warm-up; its `--latency` percentiles are reported.

    python benchmarks/gateway.py [--duration 20] [--connections 16] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from throughput import replace_section  # shared with the throughput benchmark

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN, END = "<!-- gateway:begin -->", "<!-- gateway:end -->"
ADMIN = "benchmark-admin-token-0123456789"
AT = 1_794_268_800.0  # 2026-11-10T00:00:00Z
TENANTS = [f"tenant-{i}" for i in range(10)]
MODELS = [f"model-{i}" for i in range(20)]


class FixedSource:
    """A snapshot that does not change: the benchmark measures the API, not the twin."""

    def refresh(self, wall: float):
        from gpupact.ledger import Interval
        from gpupact.serve import Backend, Snapshot

        backends = []
        for i, model in enumerate(MODELS):
            for j in range(2):
                backends.append(
                    Backend(
                        f"{model}-svc-{j}",
                        model,
                        TENANTS[(i + j) % len(TENANTS)],
                        "gpu-inference",
                        desired=4,
                        ready=4 - (i % 3 == 0),
                        pending=int(i % 3 == 0),
                        queue_length=float((i * 3 + j * 4) % 9),
                        kv_cache_use=((i + j) % 10) / 10,
                        cold_start_seconds=300.0,
                        ttft_p99_seconds=0.5,
                    )
                )
        usage = tuple(
            Interval(
                f"k{i}",
                "twin",
                f"p{i}",
                t,
                2.0,
                AT - 3600 * (i + 1),
                None,
                tenant=t,
                model=MODELS[i],
                pool="gpu-inference",
            )
            for i, t in enumerate(TENANTS)
        )
        return Snapshot.build(AT, backends=tuple(backends), intervals=usage)


def serve(port: int, db: str) -> None:
    import uvicorn

    from gpupact.ledger import Ledger
    from gpupact.serve import ServeState, create_app, parse_tokens

    tokens = parse_tokens(
        {
            "tenants": [
                {"name": t, "token": f"{t}-token-0123456789", "gpuHourBudget": 10.0 * (i + 1)}
                for i, t in enumerate(TENANTS)
            ],
            "admins": [{"name": "bench", "token": ADMIN}],
        }
    )
    state = ServeState(FixedSource(), tokens, Ledger.open(db), time.time, refresh_seconds=None)
    state.refresh()
    uvicorn.run(
        create_app(state), host="127.0.0.1", port=port, log_level="warning", access_log=False
    )


LUA = """
local bodies = {BODIES}
local i = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer TOKEN"
request = function()
  i = i % #bodies + 1
  return wrk.format(nil, "/v1/decisions", nil, bodies[i])
end
"""


def lua_script() -> str:
    bodies = []
    for i in range(200):
        body = {
            "tenant": TENANTS[i % len(TENANTS)],
            "model": MODELS[(i * 7) % len(MODELS)],
            "contextTokens": (i * 997) % 40000,
            "priority": ("high", "normal", "low")[i % 3],
            "risk": ("low", "medium", "high")[i % 3],
        }
        bodies.append("[[" + json.dumps(body) + "]]")
    return LUA.replace("BODIES", ", ".join(bodies)).replace("TOKEN", ADMIN)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def parse_wrk(out: str) -> dict[str, float]:
    result = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))}  # type: ignore[union-attr]
    for pct in ("50", "90", "99"):
        match = re.search(rf"^\s+{pct}(?:\.000)?%\s+(\S+)", out, re.M)
        result[f"p{pct}"] = _ms(match.group(1)) if match else float("nan")
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    result["non2xx"] = float(errors.group(1)) if errors else 0.0
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.db)
        return
    wrk = shutil.which("wrk")
    if wrk is None:
        sys.exit("needs wrk: apt-get install wrk")
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(port), "--db", f"{tmp}/ledger.db"]
        )
        try:
            url = f"http://127.0.0.1:{port}"
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"{url}/healthz", timeout=1)
                    break
                except OSError:
                    time.sleep(0.2)
            script = Path(tmp) / "decisions.lua"
            script.write_text(lua_script())
            base = [wrk, "-t1", f"-c{args.connections}", "--latency", "-s", str(script), url]
            subprocess.run([*base[:3], "-d3s", *base[3:]], capture_output=True, check=True)
            cpu0 = _cpu(server.pid)
            out = subprocess.run(
                [*base[:3], f"-d{args.duration}s", *base[3:]],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            server_cpu = _cpu(server.pid) - cpu0
        finally:
            server.terminate()
            server.wait(timeout=30)
    r = parse_wrk(out)
    line = (
        f"| {args.connections} | {args.duration} | {r['rps']:,.0f} | {r['p50']:.2f} | "
        f"{r['p90']:.2f} | {r['p99']:.2f} | {server_cpu / args.duration:.2f} | "
        f"{r['rps'] * args.duration / max(server_cpu, 1e-9):,.0f} | {int(r['non2xx'])} |"
    )
    table = (
        "| connections | seconds | decisions/s | p50 ms | p90 ms | p99 ms | server CPU cores | "
        "decisions per server CPU-second | non-2xx |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" + line
    )
    print(out)
    print(table)
    if args.write:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        section = (
            f"{BEGIN}\n## Gateway decisions (benchmarks/gateway.py)\n\n"
            "Command: `python benchmarks/gateway.py --write` (target: >= 2,000 decisions/s with "
            "p99 < 20 ms on 2 cores)\n\n"
            f"Machine: {os.cpu_count()} CPUs, {platform.machine()}; Python "
            f"{platform.python_version()}; load average at the end {load} (a machine shared "
            "with other jobs: the load generator, the server and everyone else share the 2 "
            "cores)\n\n"
            "Server: one uvicorn worker (httptools, uvloop), a fixed snapshot of 40 backends; "
            f"load: `wrk -t1 -c{args.connections} -d{args.duration}s --latency` cycling 200 "
            "request bodies (10 tenants, 20 models, all priorities and risks) with an admin "
            "token, after a 3 s warm-up.\n\n"
            f"{table}\n{END}"
        )
        replace_section(DOC, BEGIN, END, section + "\n")


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
