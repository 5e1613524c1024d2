"""Workload traces the twin replays (public cluster traces read into node and pod specs)."""
