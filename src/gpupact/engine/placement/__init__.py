"""Placement: kube-scheduler filter -> score -> select over a cluster's nodes."""
