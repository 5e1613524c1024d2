"""Capacity planning from a service's request profile: model memory and KV cache, TTFT/TPOT,
replicas, GPUs and nodes, and the pre-warm lead time of a peak (docs/plan.md)."""
