"""What one replica of a service offers a serving simulation (the twin's latency model).

The numbers come from the same memory and latency functions `gpupact plan` prints
(`replica.estimate_replica`), at the service's declared tensor-parallel size.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpupact.contract.schema import Contract, Service
from gpupact.plan.from_contract import workload_for_service
from gpupact.plan.replica import ReplicaEstimate, estimate_replica


@dataclass(frozen=True)
class ReplicaProfile:
    max_sequences: int  # concurrent sequences one replica holds (KV-cache bound, >= 1)
    prefill_tokens_per_s: float  # prompt tokens per second one replica prefills
    decode_tokens_per_s: float  # output tokens per second per sequence at a full batch
    mean_input_tokens: float
    mean_output_tokens: float

    def service_time_s(self) -> float:
        """Mean seconds a request holds a sequence slot: its prefill, then its decode."""
        return (
            self.mean_input_tokens / self.prefill_tokens_per_s
            + self.mean_output_tokens / self.decode_tokens_per_s
        )

    def ttft_s(self, queue_wait_s: float, input_tokens: float | None = None) -> float:
        """Time to first token: the wait for a slot, then the prompt's prefill."""
        tokens = self.mean_input_tokens if input_tokens is None else input_tokens
        return queue_wait_s + tokens / self.prefill_tokens_per_s


def profile_of(estimate: ReplicaEstimate) -> ReplicaProfile:
    return ReplicaProfile(
        max_sequences=max(1, estimate.sequences),
        prefill_tokens_per_s=estimate.prefill_tokens_per_s,
        decode_tokens_per_s=estimate.decode_tokens_per_s,
        mean_input_tokens=estimate.mean_input,
        mean_output_tokens=estimate.mean_output,
    )


def replica_profile(
    contract: Contract, service: Service, *, slowdown: float = 1.0
) -> ReplicaProfile:
    """One replica of `service` (from a linked contract) at its declared tensor parallelism.

    `slowdown` > 1 models a time-sliced GPU: compute and bandwidth divided by it. A service
    without a model gets the documented default model (see `from_contract`), not an error;
    a model that does not fit still yields one sequence (the plan reports the misfit)."""
    workload = workload_for_service(contract, service, slowdown)
    return profile_of(estimate_replica(workload, service.tensor_parallel))
