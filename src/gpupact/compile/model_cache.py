"""A node-local model-weights cache for the services of a pool with `coldStart.modelCache: node`.

What it compiles to: a `hostPath` volume (`DirectoryOrCreate`) named `model-cache`, mounted in
the serving container, with `HF_HOME` pointing into it. vLLM, SGLang and TGI fetch weights
through huggingface_hub, which keeps its download cache under `$HF_HOME/hub`
(https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables:
HF_HOME is the root of the cache, default ~/.cache/huggingface). A replica started on a node
where the model was loaded before finds the files on the node's disk and skips the download;
the twin then charges `cachedModelLoad` instead of `modelLoad`.

The pod template also carries `cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes:
model-cache`: cluster-autoscaler never scales down a node whose pods use a hostPath volume
unless that annotation lists the volume (`--skip-nodes-with-local-storage`, default true;
https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/FAQ.md, "What types of
pods can prevent CA from removing a node?"). The cache is a cache: losing it costs a download.
"""

from __future__ import annotations

from gpupact.compile.model import Obj
from gpupact.contract.schema import ModelCache, Pool

VOLUME = "model-cache"
HOST_PATH = "/var/lib/gpupact/model-cache"
MOUNT_PATH = "/var/cache/models"
HF_HOME = "HF_HOME"
SAFE_TO_EVICT_LOCAL = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"


def cached(pool: Pool) -> bool:
    return pool.cold_start.model_cache is ModelCache.node


def add_model_cache(pool: Pool, template: Obj) -> None:
    """Mount the node's cache into every container of a pod template (in place); nothing
    for a pool without `modelCache: node`."""
    if not cached(pool):
        return
    spec = template["spec"]
    spec["volumes"] = [
        *spec.get("volumes", []),
        {"name": VOLUME, "hostPath": {"path": HOST_PATH, "type": "DirectoryOrCreate"}},
    ]
    for container in spec["containers"]:
        container["volumeMounts"] = [
            *container.get("volumeMounts", []),
            {"name": VOLUME, "mountPath": MOUNT_PATH},
        ]
        container["env"] = [*container.get("env", []), {"name": HF_HOME, "value": MOUNT_PATH}]
    meta = template.setdefault("metadata", {})
    meta["annotations"] = {**meta.get("annotations", {}), SAFE_TO_EVICT_LOCAL: VOLUME}
