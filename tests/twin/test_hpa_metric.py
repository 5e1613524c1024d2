"""The HPA reads the metric the compiled object names, as old as the scrape and the
custom-metrics adapter make it (kubernetes.io HPA algorithm: desired = ceil(current x
current metric / target), no change within tolerance 0.1)."""

from __future__ import annotations

from gpupact.plan.engine_load import LatencyCurve, LoadPoint
from gpupact.twin.hpa import HpaController, metric_total
from gpupact.twin.metric_delay import MetricPipeline, QueueSample, queue_counts
from gpupact.twin.serving import EngineQueue
from gpupact.twin.world import HpaSpec


def spec(metric: str, target: float) -> HpaSpec:
    return HpaSpec(1, 100, target, None, None, (), (), metric)


def saturated(pods: int, max_seqs: int, waiting: float) -> QueueSample:
    return QueueSample(0.0, float(pods * max_seqs), waiting, 100.0 * pods)


def test_running_metric_cannot_see_the_queue() -> None:
    # 2 pods full at 8 sequences each, target 8 per pod: ratio 16 / (2 x 8) = 1.0 whatever
    # waits; the real HPA keeps 2 replicas
    hpa = HpaController(spec("num_requests_running", 8.0))
    for waiting in (0.0, 50.0, 5000.0):
        total = metric_total(hpa.spec, saturated(2, 8, waiting))
        assert total == 16.0
        assert hpa.desired_from_metric(2, 2, 0, total) == 2


def test_running_metric_scales_by_at_most_max_seqs_over_target() -> None:
    # target 4 with 8 slots per pod: a full pod reads 8, ratio 2, desired ceil(2 x 2) = 4,
    # not the ceil((16 + 200) / 4) = 54 that counting the queue would give
    hpa = HpaController(spec("vllm:num_requests_running", 4.0))
    total = metric_total(hpa.spec, saturated(2, 8, 200.0))
    assert hpa.desired_from_metric(2, 2, 0, total) == 4


def test_waiting_metric_sees_the_queue() -> None:
    hpa = HpaController(spec("num_requests_waiting", 10.0))
    total = metric_total(hpa.spec, saturated(2, 8, 200.0))
    assert total == 200.0
    assert hpa.desired_from_metric(2, 2, 0, total) == 20


def test_gpu_utilisation_metric_reads_the_busy_share() -> None:
    hpa = HpaController(spec("DCGM_FI_DEV_GPU_UTIL", 80.0))
    assert metric_total(hpa.spec, saturated(3, 8, 9.0)) == 300.0


def test_pipeline_serves_the_scrape_adapter_delay_old() -> None:
    pipe = MetricPipeline(scrape_interval=15.0, adapter_delay=30.0)
    for t in range(0, 200, 5):
        pipe.record(QueueSample(float(t), float(t), 0.0, 0.0))
    assert pipe.visible(29.0) is None  # nothing scraped and served yet
    assert pipe.visible(44.0).t == 0.0  # scrape at 0 served from 30 s on
    assert pipe.visible(45.0).t == 15.0
    assert pipe.visible(60.0).t == 30.0
    assert pipe.visible(74.0).t == 30.0  # the next scrape (45) is not served before 75


def test_pipeline_holds_the_last_sample_between_sparse_ticks() -> None:
    pipe = MetricPipeline(scrape_interval=15.0, adapter_delay=30.0)
    pipe.record(QueueSample(0.0, 1.0, 0.0, 0.0))
    pipe.record(QueueSample(60.0, 9.0, 0.0, 0.0))
    # scrape at 45 s sees the state set at the 0 s tick (the next tick is at 60 s)
    assert pipe.visible(75.0).running == 1.0
    assert pipe.visible(90.0).running == 9.0


def test_queue_counts_of_the_engine_queue() -> None:
    top = LoadPoint(2.0, 0.5, 1.0, 0.02, 0.03, 8.0, 16.0, 1.0, 0.9, 2.0, 0)
    queue = EngineQueue(LatencyCurve(2.0, (top,)))
    queue.step(rps=10.0, replicas=1, dt=10.0)  # 2 req/s served, 80 requests pile up
    running, waiting = queue_counts(queue)
    assert running == 16.0  # the batch: what vllm:num_requests_running counts
    assert waiting == queue.backlog + 1.0 == 81.0
