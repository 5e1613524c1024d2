"""Read a live cluster into the same ClusterSnapshot, with the official Kubernetes client.

Read-only: every request is a GET on a list endpoint (`/api/v1/pods?limit=500&continue=...`),
read as raw JSON (no model classes: the objects reach the same parsers as a kubectl
snapshot). A kind whose API is not served (404: no Volcano, no Karpenter) is skipped; a kind
the credentials may not list (403) is skipped with a note, except Nodes and Pods, without
which there is nothing to diagnose (a server that serves neither is not an API server).
docs/diagnose.md has the minimal ClusterRole.

As kubectl: without --kubeconfig, $KUBECONFIG (a list of files, merged) or ~/.kube/config,
or the in-cluster service account inside a pod; without --context, the current context. The
kubeconfig is never written back (the client would otherwise persist refreshed credentials).
Every request has a connect and a read timeout, is not retried after a read timeout, and has
an overall deadline ($GPUPACT_REQUEST_TIMEOUT, default 120 s: ops.request_deadline) that also
ends a server dripping bytes just under the read timeout; a list has at most MAX_PAGES pages,
so no server can hold a run forever.

The `kubernetes` package is imported only here, and only when a live cluster is asked for.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from gpupact.errors import FieldError, InputError
from gpupact.ops.model import ClusterSnapshot, SnapshotBuilder
from gpupact.ops.request_deadline import ENV as DEADLINE_ENV
from gpupact.ops.request_deadline import DeadlineExceeded, RequestDeadline, configured_seconds

PAGE_SIZE = 500
MAX_PAGES = 2_000  # a million objects of one kind at PAGE_SIZE
CONNECT_TIMEOUT = 10.0  # seconds
READ_TIMEOUT = 60.0  # seconds for one page (kubectl's default is no limit)
DEFAULT_KUBECONFIG = "~/.kube/config"


@dataclass(frozen=True)
class Resource:
    group: str  # "" for the core API
    versions: tuple[str, ...]  # tried in order; the first one served is used
    plural: str
    kind: str
    required: bool = False

    def path(self, version: str) -> str:
        if not self.group:
            return f"/api/{version}/{self.plural}"
        return f"/apis/{self.group}/{version}/{self.plural}"

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version


RESOURCES: tuple[Resource, ...] = (
    Resource("", ("v1",), "nodes", "Node", required=True),
    Resource("", ("v1",), "pods", "Pod", required=True),
    Resource("", ("v1",), "events", "Event"),
    Resource("", ("v1",), "namespaces", "Namespace"),
    Resource("scheduling.k8s.io", ("v1",), "priorityclasses", "PriorityClass"),
    Resource("apps", ("v1",), "deployments", "Deployment"),
    Resource("apps", ("v1",), "statefulsets", "StatefulSet"),
    Resource("apps", ("v1",), "replicasets", "ReplicaSet"),
    Resource("batch", ("v1",), "jobs", "Job"),
    Resource("leaderworkerset.x-k8s.io", ("v1",), "leaderworkersets", "LeaderWorkerSet"),
    Resource("scheduling.volcano.sh", ("v1beta1",), "podgroups", "PodGroup"),
    Resource("scheduling.volcano.sh", ("v1beta1",), "queues", "Queue"),
    Resource("batch.volcano.sh", ("v1alpha1",), "jobs", "Job"),
    Resource("kueue.x-k8s.io", ("v1beta2", "v1beta1"), "resourceflavors", "ResourceFlavor"),
    Resource("kueue.x-k8s.io", ("v1beta2", "v1beta1"), "clusterqueues", "ClusterQueue"),
    Resource("kueue.x-k8s.io", ("v1beta2", "v1beta1", "v1alpha1"), "cohorts", "Cohort"),
    Resource("kueue.x-k8s.io", ("v1beta2", "v1beta1"), "localqueues", "LocalQueue"),
    Resource(
        "kueue.x-k8s.io", ("v1beta2", "v1beta1"), "workloadpriorityclasses", "WorkloadPriorityClass"
    ),
    Resource("kueue.x-k8s.io", ("v1beta2", "v1beta1"), "workloads", "Workload"),
    Resource("karpenter.sh", ("v1",), "nodepools", "NodePool"),
    Resource("karpenter.sh", ("v1",), "nodeclaims", "NodeClaim"),
)


def _client(context: str | None, kubeconfig: str | None) -> Any:
    try:
        from kubernetes import client as k8s
        from kubernetes import config
        from kubernetes.config.config_exception import ConfigException
        from urllib3.util.retry import Retry
    except ImportError:  # pragma: no cover - a dependency of the package
        raise InputError(
            "reading a live cluster needs the `kubernetes` package: pip install kubernetes"
        ) from None
    if kubeconfig is not None and Path(kubeconfig).is_dir():
        raise InputError("is a directory, expected a kubeconfig file", file=kubeconfig)
    if kubeconfig is not None and not Path(kubeconfig).exists():  # a FIFO: refused below
        raise InputError("no such file", file=kubeconfig)
    files = kubeconfig or os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
    _check_kubeconfig_files(files)
    settings = k8s.Configuration()
    try:
        if kubeconfig is None and context is not None and not _any_exists(files):
            raise InputError(f"--context {context}: no kubeconfig at {files} to find it in")
        if kubeconfig is None and context is None and not _any_exists(files):
            if not os.environ.get("KUBERNETES_SERVICE_HOST"):
                raise InputError(
                    f"no cluster: no kubeconfig at {files}; give --snapshot DIR, "
                    f"--kubeconfig FILE or set KUBECONFIG"
                )
            config.load_incluster_config(client_configuration=settings)
        else:
            config.load_kube_config(
                config_file=files,
                context=context,
                client_configuration=settings,
                persist_config=False,  # never rewrite the user's kubeconfig
            )
    except ConfigException as err:
        if context is not None and f"with name {context} in" in str(err):  # as kubectl says it
            known = ", ".join(_context_names(config, files)) or "none"
            raise InputError(
                f'--context: context "{context}" does not exist in {files} (contexts: {known})'
            ) from None
        raise InputError(f"kubeconfig: {err}") from None
    except FileNotFoundError as err:  # the kubeconfig, or a certificate file it names
        raise InputError("no such file", file=err.filename or files) from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError) as err:
        # the client reads the file with no checks of its own: not UTF-8, not YAML, a list
        # where a mapping belongs all surface as Python errors
        detail = " ".join(str(err).split()) or type(err).__name__
        raise InputError(f"not a valid kubeconfig: {detail}", file=kubeconfig or files) from None
    # one retry for a refused connection; none after a read timeout (a black hole would
    # otherwise hold each page for several read timeouts)
    settings.retries = Retry(total=1, read=0, redirect=0, status=0)
    deadline = RequestDeadline(configured_seconds())
    client = k8s.ApiClient(configuration=settings)
    deadline.install(client.rest_client.pool_manager)
    client.gpupact_deadline = deadline  # read by _get for every request of this client
    return client


MAX_KUBECONFIG_BYTES = 16 << 20


def _check_kubeconfig_files(files: str) -> None:
    """The client reads a kubeconfig whole, with no limit: `/dev/zero` or a FIFO would hang it."""
    for name in (f for f in files.split(os.pathsep) if f):
        path = Path(name).expanduser()
        if not path.exists():
            continue
        if not path.is_file():
            raise InputError("not a regular file, expected a kubeconfig", file=name)
        if path.stat().st_size > MAX_KUBECONFIG_BYTES:
            raise InputError(
                f"larger than {MAX_KUBECONFIG_BYTES >> 20} MiB: not a kubeconfig", file=name
            )


def _context_names(config: Any, files: str) -> list[str]:
    try:
        contexts, _ = config.list_kube_config_contexts(config_file=files)
    except Exception:  # only for the message: the file was read once already
        return []
    return [str(c.get("name")) for c in contexts or [] if isinstance(c, dict)]


def _any_exists(files: str) -> bool:
    return any(Path(f).expanduser().exists() for f in files.split(os.pathsep) if f)


_CORE_LISTS = {
    "nodes": "list_node",
    "pods": "list_pod_for_all_namespaces",
    "events": "list_event_for_all_namespaces",
    "namespaces": "list_namespace",
}


def _get(client: Any, resource: Resource, version: str, token: str) -> Mapping[str, Any]:
    """One page of a list, as the decoded JSON body (ApiException on HTTP errors). The typed
    list calls are used without deserialising (raw JSON), `/apis/...` through the custom
    objects API, which lists any group's resource by path."""
    from kubernetes import client as k8s

    options: dict[str, Any] = {
        "limit": PAGE_SIZE,
        "_preload_content": False,
        "_request_timeout": (CONNECT_TIMEOUT, READ_TIMEOUT),
    }
    if token:
        options["_continue"] = token
    where = resource.path(version)
    deadline: RequestDeadline = client.gpupact_deadline
    # the API objects are built before the clock starts: building one is client-side work
    # (about a second for CoreV1Api's validators), not the server's time
    if not resource.group:
        call = partial(getattr(k8s.CoreV1Api(client), _CORE_LISTS[resource.plural]))
    else:
        api = k8s.CustomObjectsApi(client)
        call = partial(api.list_cluster_custom_object, resource.group, version, resource.plural)
    response = None
    try:
        with deadline.request():  # headers and body: the whole exchange
            response = call(**options)
            data = response.data
    except DeadlineExceeded:
        if response is not None:
            response.close()  # its file object holds the socket open, the server writing on
        raise InputError(
            f"{where}: no complete answer within {deadline.seconds:g} s, the deadline of one "
            f"request (${DEADLINE_ENV} sets it)"
        ) from None
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):  # HTML from a proxy, a login page, a truncated body
        start = " ".join(data[:60].decode("utf-8", "replace").split())
        raise InputError(
            f"{where}: the server answered 200 with something other than JSON "
            f"({start!r}...): is this a Kubernetes API server?"
        ) from None
    if not isinstance(body, dict) or not isinstance(body.get("items", False), list | None):
        raise InputError(f"{where}: expected a list object from the API server")
    return body


def list_objects(client: Any, resource: Resource, version: str) -> Iterator[dict[str, Any]]:
    """Every object of one kind, page by page; each gets the kind/apiVersion the API server
    leaves off list items (kubectl adds them the same way)."""
    token = ""
    for _ in range(MAX_PAGES):
        body = _get(client, resource, version, token)
        for item in body.get("items") or []:
            if isinstance(item, dict):
                item.setdefault("kind", resource.kind)
                item.setdefault("apiVersion", resource.api_version(version))
                yield item
        following = (body.get("metadata") or {}).get("continue") or ""
        if not following:
            return
        if following == token:
            raise InputError(f"{resource.path(version)}: the server repeats its continue token")
        token = following
    raise InputError(
        f"{resource.path(version)}: more than {MAX_PAGES} pages of {PAGE_SIZE}; refusing to "
        f"read on (does the server ever stop sending a continue token?)"
    )


def load_live(context: str | None = None, kubeconfig: str | None = None) -> ClusterSnapshot:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    client = _client(context, kubeconfig)
    source = f"context {context}" if context else "current context"
    builder = SnapshotBuilder(source=source)
    skipped: list[str] = []
    try:
        for resource in RESOURCES:
            for version in resource.versions:
                try:
                    for obj in list_objects(client, resource, version):
                        _add(builder, obj, source)
                except ApiException as err:
                    if err.status == 404 and resource.required:
                        raise InputError(
                            f"{source}: {resource.path(version)} is not served (HTTP 404): "
                            f"is {client.configuration.host} a Kubernetes API server?"
                        ) from None
                    if err.status == 404:
                        continue  # not served at this version: try the next one
                    if err.status in (401, 403) and not resource.required:
                        what = f"{resource.plural}.{resource.group or 'core'}"
                        skipped.append(f"{what}: {err.reason}")
                        break
                    raise InputError(
                        f"{source}: listing {resource.plural}: HTTP {err.status} {err.reason}"
                    ) from None
                break
    except (OSError, HTTPError) as err:
        raise InputError(f"{source}: cannot reach the API server: {err}") from None
    finally:
        close = getattr(client, "close", None)
        if close is not None:
            close()
    snapshot = builder.finish()
    if skipped:
        snapshot.ignored.update({f"forbidden {s}": 1 for s in skipped})
    return snapshot


def _add(builder: SnapshotBuilder, obj: dict[str, Any], source: str) -> None:
    try:
        builder.add(obj)
    except FieldError as err:
        meta = obj.get("metadata") or {}
        name = meta.get("name", "?")
        ns = meta.get("namespace")
        label = f"{ns}/{name}" if ns else name
        raise InputError(f"{source}: {obj.get('kind')} {label}: {err}") from None
