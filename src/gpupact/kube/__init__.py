"""Upstream Kubernetes semantics as pure functions (stdlib only).

Each module mirrors one upstream concept so a reader who knows kube-scheduler finds the
rule where they expect it: quantities, label/node selectors, taints, pod requests,
NodeResourcesFit, PodTopologySpread, and reading objects from `kubectl get -o json`.
Shared by all of them: `fields` (typed readers of JSON/YAML fields) and `validation`
(apimachinery field errors and the API server's name rules).
"""
