"""Cluster state: nodes, pods and groups read from snapshots, ready for the engine."""
