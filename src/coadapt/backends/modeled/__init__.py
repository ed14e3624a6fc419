"""Modeled jobs: discrete-event replay of a workload on a modeled cluster (SimPy)."""
