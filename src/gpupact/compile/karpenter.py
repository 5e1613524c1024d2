"""Karpenter (`karpenter.sh/v1`): one NodePool per pool for its elastic part.

A pool's `nodes.min` are its fixed nodes (reserved capacity that is always there, labelled and
tainted with the node patches core.py writes); Karpenter adds the elastic `max - min` on
demand, so the NodePool's `limits.nodes` is that difference and a pool with `min == max` has
no NodePool. Karpenter cannot hold a minimum of dynamic nodes, which is why the minimum is
not left to it.

- template labels: Table 43-2's node labels; taints: the pool's `workload=<class>` taint;
- requirements: the pool's zones, the capacity type (on-demand when any class of the pool is
  not preemptible; spot allowed when all are), and the GPU, from the provider's well-known
  instance labels: AWS (`karpenter.k8s.aws/instance-gpu-*`: manufacturer, name, count and a
  GPU-memory floor, so an A100 40GB node cannot join an a100-80g pool) and Azure
  (`karpenter.azure.com/sku-gpu-*`: manufacturer, name, count; Azure publishes no GPU memory
  label). Any other provider's NodePool would launch whatever instance is cheapest, GPU or
  not, so compile refuses it (a pool with nodes.min == nodes.max needs no NodePool);
- limits: nodes, plus the pool's GPUs (exclusive pools, where a node reports its physical
  GPUs; MIG and time-sliced nodes report other counts, so the node limit bounds them) and
  cpu/memory when the node shape is known;
- disruption: online pools consolidate only empty nodes, one node at a time; every pool waits
  its cold start before consolidating (a node is not given back faster than one comes back).
"""

from __future__ import annotations

from gpupact.compile.core import taint_of
from gpupact.compile.gpu_operator import device_labels
from gpupact.compile.model import NodeClassRef, Obj
from gpupact.compile.names import ZONE_KEY, go_duration, gpu_family, platform_labels
from gpupact.contract.schema import Contract, Pool
from gpupact.errors import FieldError
from gpupact.kube.quantity import QuantityError, format_resource_amount

KARPENTER_API = "karpenter.sh/v1"
AWS_GPU = "karpenter.k8s.aws/instance-gpu-"
AZURE_GPU = "karpenter.azure.com/sku-gpu-"
AZURE_GROUP = "karpenter.azure.com"
MIB = 2**20


def node_pool(contract: Contract, pool: Pool, node_class: NodeClassRef) -> Obj | None:
    elastic = pool.nodes.max - pool.nodes.min
    if elastic <= 0:
        return None
    if not (node_class.aws or node_class.group == AZURE_GROUP):
        index = contract.pools.index(pool)
        raise FieldError(
            ("pools", index, "nodes"),
            f"pool {pool.name} has elastic nodes (nodes.max > nodes.min), but Karpenter node "
            f"class {node_class.group}/{node_class.kind} has no GPU instance labels gpupact "
            f"knows: its NodePool could launch nodes without the pool's GPU "
            f"({pool.gpu.model}). Use an AWS (karpenter.k8s.aws/EC2NodeClass/...) or Azure "
            f"(karpenter.azure.com/AKSNodeClass/...) node class, or set nodes.min to nodes.max "
            f"and provision the nodes yourself",
        )
    classes = [contract.workload_class(c) for c in pool.classes]
    online = any(not c.preemptible for c in classes)
    template_spec: Obj = {
        "nodeClassRef": {
            "group": node_class.group,
            "kind": node_class.kind,
            "name": node_class.name,
        },
        "requirements": _requirements(pool, node_class, online),
    }
    if pool.taint:
        template_spec["taints"] = [taint_of(pool)]
    return {
        "apiVersion": KARPENTER_API,
        "kind": "NodePool",
        "metadata": {
            "name": pool.name,
            "labels": platform_labels(contract, pool=pool.name),
        },
        "spec": {
            "template": {
                "metadata": {"labels": {**pool.node_labels(), **device_labels(pool)}},
                "spec": template_spec,
            },
            "limits": _limits(pool, elastic),
            "disruption": {
                "consolidationPolicy": "WhenEmpty" if online else "WhenEmptyOrUnderutilized",
                "consolidateAfter": go_duration(pool.cold_start.total),
                "budgets": [{"nodes": "1" if online else "10%"}],
            },
        },
    }


def _requirements(pool: Pool, node_class: NodeClassRef, online: bool) -> list[Obj]:
    out: list[Obj] = [
        {
            "key": "karpenter.sh/capacity-type",
            "operator": "In",
            "values": ["on-demand"] if online else ["on-demand", "spot"],
        }
    ]
    if pool.zones:
        out.append({"key": ZONE_KEY, "operator": "In", "values": list(pool.zones)})
    if node_class.aws:
        out.append({"key": AWS_GPU + "manufacturer", "operator": "In", "values": ["nvidia"]})
        out.append({"key": AWS_GPU + "name", "operator": "In", "values": [gpu_family(pool)]})
        out.append({"key": AWS_GPU + "count", "operator": "In", "values": [str(pool.gpu.per_node)]})
        if pool.gpu.memory:
            # a floor at 90% of the contract's memory: providers report slightly less than
            # the marketing size, and a smaller model of the same GPU stays out
            floor = pool.gpu.memory // MIB * 9 // 10
            out.append({"key": AWS_GPU + "memory", "operator": "Gt", "values": [str(floor)]})
    elif node_class.group == AZURE_GROUP:
        # Azure names GPUs in capitals (A100, H100, T4)
        out.append({"key": AZURE_GPU + "manufacturer", "operator": "In", "values": ["nvidia"]})
        out.append(
            {"key": AZURE_GPU + "name", "operator": "In", "values": [gpu_family(pool).upper()]}
        )
        out.append(
            {"key": AZURE_GPU + "count", "operator": "In", "values": [str(pool.gpu.per_node)]}
        )
    return out


def _limits(pool: Pool, elastic: int) -> Obj:
    limits: Obj = {"nodes": elastic}
    if not pool.sharing.shared:
        limits["nvidia.com/gpu"] = elastic * pool.gpu.per_node
    if pool.node and pool.node.cpu is not None:
        limits["cpu"] = format_resource_amount("cpu", pool.node.cpu * elastic)
    if pool.node and pool.node.memory is not None:
        limits["memory"] = format_resource_amount("memory", pool.node.memory * elastic)
    return limits


def compile_karpenter(contract: Contract, node_class: NodeClassRef) -> list[Obj]:
    out = []
    for i, pool in enumerate(contract.pools):
        try:
            obj = node_pool(contract, pool, node_class)
        except QuantityError as err:  # node size x elastic nodes beyond an int64
            raise FieldError(("pools", i, "nodes", "max"), f"the pool's limits: {err}") from None
        if obj is not None:
            out.append(obj)
    return out
