"""NVIDIA GPU Operator configuration of shared pools: what makes a node offer the devices the
contract counts (Table 43-4). An exclusive pool needs none.

- time-slicing (`timeslice:N`): a k8s-device-plugin config (api/config/v1) with
  `sharing.timeSlicing.resources: [{name: nvidia.com/gpu, replicas: N}]`, so each GPU is
  advertised N times as `nvidia.com/gpu` (no renaming: pods keep requesting nvidia.com/gpu);
- MIG (`mig:<profile>`): a mig-parted config (api/spec/v1) that cuts every GPU of the node into
  `<profile>` instances, plus a device-plugin config with `flags.migStrategy: mixed`, the strategy
  under which pods request `nvidia.com/mig-<profile>` (compile's resource name).

The operator picks a config per node from a label: `nvidia.com/device-plugin.config=<key>`
(a key of the device-plugin ConfigMap) and `nvidia.com/mig.config=<name>` (a config of the
mig-parted file). `device_labels` gives them to the node patches and the Karpenter NodePool
template. The ClusterPolicy has to name the two ConfigMaps (`devicePlugin.config.name`,
`migManager.config.name`) and set `mig.strategy: mixed`; docs/compile.md has the snippet.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpupact.compile.model import Obj
from gpupact.compile.names import owner_annotations, platform_labels
from gpupact.contract.schema import Contract, Pool

GPU_OPERATOR_NAMESPACE = "gpu-operator"  # where the operator (and its ConfigMaps) live
DEVICE_PLUGIN_CONFIGMAP = "gpupact-device-plugin-config"
MIG_PARTED_CONFIGMAP = "gpupact-mig-parted-config"
MIG_PARTED_KEY = "config.yaml"  # the key the MIG manager reads its config file from
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
CONFIG_VERSION = "v1"  # both files' `version`


def device_plugin_config(pool: Pool) -> dict[str, Any] | None:
    """The device plugin's config file for the pool's nodes; None for an exclusive pool."""
    sharing = pool.sharing
    if sharing.mode == "timeslice":
        return {
            "version": CONFIG_VERSION,
            "flags": {"migStrategy": "none"},
            "sharing": {
                "timeSlicing": {
                    "resources": [{"name": "nvidia.com/gpu", "replicas": sharing.replicas}]
                }
            },
        }
    if sharing.mode == "mig":
        return {"version": CONFIG_VERSION, "flags": {"migStrategy": "mixed"}}
    return None


def mig_parted_config(pool: Pool) -> list[dict[str, Any]] | None:
    """The pool's entry of `mig-configs`: every GPU enabled and cut into as many instances of
    the profile as it holds (`Pool.devices_per_gpu`, the count every capacity figure uses).
    mig-parted refuses a layout the GPU cannot hold (the MIG manager then labels the node
    `nvidia.com/mig.config.state=failed`), e.g. a profile of another GPU model."""
    sharing = pool.sharing
    if sharing.mode != "mig":
        return None
    return [
        {
            "devices": "all",
            "mig-enabled": True,
            "mig-devices": {sharing.profile: pool.devices_per_gpu},
        }
    ]


def device_labels(pool: Pool) -> dict[str, str]:
    """Node labels that select the pool's configs (the config keys are the pool's name)."""
    labels = {}
    if device_plugin_config(pool) is not None:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = pool.name
    if mig_parted_config(pool) is not None:
        labels[MIG_CONFIG_LABEL] = pool.name
    return labels


def _text(document: Any) -> str:
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False)


def _config_map(contract: Contract, name: str, data: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": GPU_OPERATOR_NAMESPACE,
            "labels": platform_labels(contract),
            "annotations": owner_annotations(contract, contract.metadata.owner),
        },
        "data": data,
    }


def compile_gpu_operator(contract: Contract) -> list[Obj]:
    plugin = {}
    mig = {}
    for pool in contract.pools:
        config = device_plugin_config(pool)
        if config is not None:
            plugin[pool.name] = _text(config)
        layout = mig_parted_config(pool)
        if layout is not None:
            mig[pool.name] = layout
    out = []
    if plugin:
        out.append(_config_map(contract, DEVICE_PLUGIN_CONFIGMAP, plugin))
    if mig:
        document = {"version": CONFIG_VERSION, "mig-configs": mig}
        out.append(_config_map(contract, MIG_PARTED_CONFIGMAP, {MIG_PARTED_KEY: _text(document)}))
    return out
