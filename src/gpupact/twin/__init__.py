"""The twin: a discrete-event simulation of the cluster driven by the engine."""
