"""What a failing NVIDIA device plugin (or driver container) says, and what each cause needs.

The plugin registers `nvidia.com/gpu` with the kubelet only after NVML initialises; when it
cannot, it exits and its termination message names why. The causes need different fixes: a
driver/library version mismatch is a node that was upgraded without a reboot, a driver that is
not loaded has to be installed or built for the running kernel, a GPU that fell off the bus is
hardware.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpupact.cluster.devices import GPU_RESOURCE
from gpupact.kube.objects import Pod
from gpupact.ops.memory import container_troubles, waiting_reason

if TYPE_CHECKING:
    from gpupact.ops.cluster import Analysis


@dataclass(frozen=True)
class PluginCause:
    code: str
    markers: tuple[str, ...]  # case-insensitive substrings of the termination message
    what: str
    fix: str


CAUSES = (
    PluginCause(
        "driver-library-mismatch",
        ("driver/library version mismatch",),
        "the loaded NVIDIA kernel module and the user-space driver libraries are different "
        "versions (a driver upgrade without a reboot, or a driver container at another version)",
        "reboot the node (or unload and reload the nvidia kernel modules) so the kernel module "
        "matches the installed libraries; with the GPU operator, let its driver DaemonSet "
        "finish on this node first",
    ),
    PluginCause(
        "driver-not-loaded",
        (
            "driver not loaded",
            "could not load nvml",
            "libnvidia-ml.so",
            "couldn't communicate with the nvidia driver",
            "nvml_error_library_not_found",
        ),
        "no NVIDIA driver is loaded on the node (not installed, not built for the running "
        "kernel, or the driver container is not ready)",
        "install or load the driver: the driver DaemonSet pod on the node and its logs, "
        "`lsmod | grep nvidia`, `dmesg | grep -i nvrm`; after a kernel update, build the "
        "driver for the new kernel",
    ),
    PluginCause(
        "gpu-lost",
        ("fallen off the bus", "gpu is lost", "unknown error", "xid"),
        "a GPU stopped answering the driver (fell off the bus / Xid error)",
        "drain the node and power-cycle it; if it happens again, have the GPU replaced",
    ),
)


def plugin_cause(message: str) -> PluginCause | None:
    text = message.lower()
    return next((c for c in CAUSES if any(m in text for m in c.markers)), None)


def device_plugin_pods(a: Analysis, node: str) -> list[tuple[Pod, str, PluginCause | None]]:
    """The device plugin / driver pods on the node: a line each with their state and last
    termination message, and the cause that message names."""
    out = []
    for pod in a.pods_by_node.get(node, []):
        if not any(k in pod.name for k in ("device-plugin", "nvidia-driver")):
            continue
        troubles = container_troubles(pod)
        reason = waiting_reason(pod)
        line = f"  {'driver' if 'driver' in pod.name else 'device plugin'} pod {pod.key}: " + (
            f"{pod.phase}" + (f" ({reason})" if reason else "")
        )
        cause = None
        for trouble in troubles:
            line += f"; {trouble.line(a.now)}"
            cause = cause or plugin_cause(trouble.message or trouble.waiting_message)
        out.append((pod, line, cause))
    return out


def device_plugin_action(nodes: list[str], plugins: list[Pod], causes: list[Any]) -> str:
    steps = [f"`kubectl cordon {' '.join(nodes)}`"]
    if causes:
        steps.extend(c.fix for c in causes)
    else:
        steps.append("check the driver on the node (`nvidia-smi`)")
    for plugin in plugins[:3]:
        steps.append(
            f"restart the plugin: `kubectl -n {plugin.namespace} delete pod {plugin.name}` "
            "(its DaemonSet recreates it)"
        )
    if not plugins:
        steps.append("restart the NVIDIA device plugin / GPU operator pods on the node")
    steps.append(
        f"once `kubectl describe node` shows {GPU_RESOURCE} again: "
        f"`kubectl uncordon {' '.join(nodes)}`; roll driver upgrades node by node"
    )
    return "; ".join(steps)
