"""The world a run happens in: the cluster (nodes, kinds, network), the
workload, the job types' declared limits, the profile readers, the machine
and network calibrations, and the simulator's truth and costs.

The bottom layer: it imports nothing of coadapt but ``util`` (see
``docs/architecture.md``). A run's :class:`coadapt.world.world.World` is built
once from these and handed down.
"""
