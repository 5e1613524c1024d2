"""Vectorised kube-scheduler plugins over ClusterState columns (one module per upstream plugin
family). Each mirrors a scalar rule in gpupact.kube or engine/placement/framework.py and is
tested node for node against it."""
