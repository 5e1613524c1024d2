"""FGD-Reach (ours): FGD whose fragment also counts idle GPU the node's free CPU cannot feed.

FGD asks whether one typical pod still fits a node. On the openb trace much of the GPU left
idle at full load sits on nodes whose CPU was eaten by earlier pods (CPU-only jobs and
CPU-heavy GPU jobs on the 12-cores-per-GPU nodes): every later GPU pod fails there although
each device looks usable. FGD-Reach adds, per typical GPU pod, the idle GPU milli beyond what
the node's free CPU can feed at that pod's CPU:GPU ratio (fragmentation.cpu_stranded_frag)
to FGD's fragment and descends the sum exactly as FGD does (same score, memo and device
choice). CPU-only pods then go where CPU is plentiful relative to idle GPUs, and GPU shares
fill devices on CPU-poor nodes.

Pods that take whole devices are placed by plain FGD: for them the added term mostly
rewards CPU headroom, i.e. opening idle nodes, which spends the whole idle nodes that rare
multi-GPU pods need (they are too rare to be typical pods, so no fragment term sees them);
on the default openb trace that version starts failing 8-GPU pods from 80% arrived workload.
"""

from __future__ import annotations

import numpy as np

from gpupact.engine.placement.strategies.base import Request
from gpupact.engine.placement.strategies.fgd import FGD, Measure
from gpupact.engine.placement.strategies.fragmentation import node_frag_with_cpu_reach


class FGDReach(FGD):
    name = "FGD-Reach"

    def measure(self, cpu_free: np.ndarray, dev_free: np.ndarray, access: np.ndarray) -> np.ndarray:
        return node_frag_with_cpu_reach(self.workload, cpu_free, dev_free, access)

    def measure_for(self, req: Request) -> tuple[str, Measure]:
        if req.gpu_count and not req.is_share:
            return "fgd", super().measure
        return "fgd-reach", self.measure
