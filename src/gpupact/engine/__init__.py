"""The engine: admission (Kueue), gang (Volcano), placement (kube-scheduler) and preemption.

Every refusal is returned as a reason; the twin, `diagnose` and `plan` all call this package.
"""
