"""Compile a contract into Kubernetes objects, one module per target engine:

core.py       namespaces, PriorityClasses, node patches, Deployments / LeaderWorkerSets,
              Services, HPAs, PDBs, Kueue-admitted Jobs and CronJobs
kueue.py      ResourceFlavors, Cohorts, ClusterQueues, LocalQueues, WorkloadPriorityClasses
volcano.py    Queues, PodGroups, Volcano Jobs (gangs)
karpenter.py  NodePools (elastic part of each pool)
prewarm.py    pre-warm windows: placeholder-pod CronJobs and their PriorityClass
model_cache.py  the node-local model cache volume (coldStart.modelCache: node)
gpu_operator.py  device plugin / MIG manager ConfigMaps of time-sliced and MIG pools
validate.py   checks of the emitted objects (always) and schema validation (tests)
writer.py     deterministic files, kustomization.yaml, atomic replace of the output

bundle = compile_contract(contract, CompileOptions(now=...))   # FieldError / InputError
write_bundle(bundle, Path("out"), fmt="yaml")
"""

from __future__ import annotations

from gpupact.compile.core import compile_core, node_patches
from gpupact.compile.gpu_operator import compile_gpu_operator
from gpupact.compile.karpenter import compile_karpenter
from gpupact.compile.kueue import compile_kueue
from gpupact.compile.model import TARGETS, Bundle, CompileOptions, Emitted, NodeClassRef, Obj
from gpupact.compile.names import require_owners
from gpupact.compile.prewarm import compile_prewarm
from gpupact.compile.quota import require_expiries
from gpupact.compile.validate import Problem, check_bundle
from gpupact.compile.volcano import compile_volcano
from gpupact.compile.writer import OutputRefused, render_files, write_bundle
from gpupact.contract.schema import Contract
from gpupact.errors import InputError


class CompileInvalid(InputError):
    """The contract loads but its objects would be refused; one line per problem."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(str(problems[0]))
        self.problems = problems

    def __str__(self) -> str:
        return "\n".join(f"cannot compile: {p}" for p in self.problems)


def compile_contract(contract: Contract, options: CompileOptions) -> Bundle:
    """Every object of the contract, grouped by target, checked by `check_bundle`. Raises
    FieldError (a contract path) or CompileInvalid on input that cannot be compiled."""
    require_expiries(contract)
    require_owners(contract)
    core = compile_core(contract)
    bundle = Bundle(contract.metadata.name)
    prewarm_namespaces, prewarm = compile_prewarm(contract)
    bundle.add("namespaces", core["namespaces"] + prewarm_namespaces)
    bundle.add("kueue", compile_kueue(contract, options.now, options.kueue_api))
    bundle.add("volcano", compile_volcano(contract, options.now))
    bundle.add("karpenter", compile_karpenter(contract, options.node_class))
    bundle.add("core", core["core"] + prewarm)
    bundle.add("leaderworkerset", core["leaderworkerset"])
    bundle.add("gpu-operator", compile_gpu_operator(contract))
    bundle.node_patches = node_patches(contract)
    problems = check_bundle(bundle)
    if problems:
        raise CompileInvalid(problems)
    return bundle


__all__ = [
    "TARGETS",
    "Bundle",
    "CompileInvalid",
    "CompileOptions",
    "Emitted",
    "NodeClassRef",
    "Obj",
    "OutputRefused",
    "compile_contract",
    "render_files",
    "write_bundle",
]
