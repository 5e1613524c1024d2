"""A real Prometheus (the Debian package's binary) scrapes the API's /metrics and a DCGM-style
exporter on loopback; PromQL queries then read back what the API and the ledger computed."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from components import prometheus_binary
from gpupact.ledger.dcgm import busy_rows
from gpupact.serve import create_app

DCGM = (
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",modelName="NVIDIA H100 80GB HBM3",'
    'Hostname="h100-1",container="main",namespace="search",pod="chat-search-0"} 50\n'
    'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-2",modelName="NVIDIA H100 80GB HBM3",'
    'Hostname="h100-1",container="main",namespace="search",pod="chat-search-0"} 30\n'
    'DCGM_FI_DEV_GPU_UTIL{gpu="2",UUID="GPU-3",modelName="NVIDIA H100 80GB HBM3",'
    'Hostname="h100-1",container="",namespace="",pod=""} 0\n'
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Dcgm(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = DCGM.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


@pytest.fixture
def stack(make_state, tmp_path: Path) -> Iterator[dict[str, Any]]:
    binary = prometheus_binary()
    state = make_state(scale=3600.0)
    state.clock.t += 5  # five simulated hours of usage
    state.refresh()
    api_port, dcgm_port, prom_port = free_port(), free_port(), free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(state), host="127.0.0.1", port=api_port, log_level="warning")
    )
    api = threading.Thread(target=server.run, daemon=True)
    api.start()
    dcgm = ThreadingHTTPServer(("127.0.0.1", dcgm_port), _Dcgm)
    threading.Thread(target=dcgm.serve_forever, daemon=True).start()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n"
        f"  - job_name: gpupact\n    static_configs: [{{targets: ['127.0.0.1:{api_port}']}}]\n"
        f"  - job_name: dcgm\n    static_configs: [{{targets: ['127.0.0.1:{dcgm_port}']}}]\n"
    )
    prom = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{prom_port}"
    try:
        yield {"state": state, "base": base, "prom": prom}
    finally:
        prom.terminate()
        prom.wait(timeout=30)
        server.should_exit = True
        api.join(timeout=10)
        dcgm.shutdown()


def query(base: str, promql: str, at: float | None = None) -> dict[str, Any]:
    params = {"query": promql}
    if at is not None:
        params["time"] = f"{at:.3f}"
    return _get(f"{base}/api/v1/query?{urllib.parse.urlencode(params)}")


def wait_for(base: str, promql: str, prom: subprocess.Popen, timeout: float = 60) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert prom.poll() is None, "prometheus exited"
        try:
            result = query(base, promql)["data"]["result"]
            if result:
                return result
        except OSError:
            pass  # not listening yet
        time.sleep(0.5)
    raise AssertionError(f"no result for {promql} within {timeout}s")


def test_prometheus_scrapes_the_api_and_promql_reads_it_back(stack) -> None:
    base, prom, state = stack["base"], stack["prom"], stack["state"]
    wait_for(base, 'up{job="gpupact"} == 1', prom)
    (hours,) = wait_for(base, 'gpupact_gpu_hours_total{tenant="search",model="qwen-72b"}', prom)
    expected = state.snapshot.hours_by_tenant_model[("search", "qwen-72b")]
    assert float(hours["value"][1]) == pytest.approx(expected) and expected == pytest.approx(10.0)
    # the pending histogram: online-infer waited 2 s and 40 s; the median bucket is (1, 5]
    (median,) = wait_for(
        base,
        "histogram_quantile(0.5, sum by (le) "
        '(gpupact_pod_pending_seconds_bucket{workload_class="online-infer"}))',
        prom,
    )
    assert float(median["value"][1]) == pytest.approx(5.0)
    (ready,) = wait_for(base, 'sum(gpupact_backend_replicas{state="ready"})', prom)
    assert float(ready["value"][1]) == 7.0


def test_busy_gpu_hours_from_dcgm_through_a_real_prometheus(stack) -> None:
    base, prom = stack["base"], stack["prom"]
    series = 'DCGM_FI_DEV_GPU_UTIL{pod="chat-search-0",gpu="0"}'
    wait_for(base, f"count_over_time({series}[1m]) > 3", prom)
    end = time.time()
    (samples,) = query(base, f"count_over_time({series}[60s:1s])", end)["data"]["result"]
    points = float(samples["value"][1])

    def run(promql: str, at: float) -> dict[str, Any]:
        return query(base, promql, at)

    rows = busy_rows(run, "DCGM_FI_DEV_GPU_UTIL", end - 60, end, step=1)
    (row,) = rows  # the idle GPU without a pod is left out
    assert (row["namespace"], row["pod"]) == ("search", "chat-search-0")
    # two GPUs busy 50 % and 30 % of each 1 s step: 0.8 GPU-seconds per step
    assert row["busy_gpu_hours"] == pytest.approx(0.8 * points / 3600, rel=1e-6)
