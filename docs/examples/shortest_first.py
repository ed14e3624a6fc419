"""shortest-first: the jobs that have had the least service go first.

An example of a policy from outside the package (docs/writing-a-policy.md).
Every round the jobs, least attained service (slot-seconds held so far) first,
each get their requested slots (at most ``max_slots``) while slots last, at
their requested batch size; Pollux's placer puts the slots on nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coadapt.policies import Assignment, Decision, PolicyConfig, Snapshot
from coadapt.policies.placement import Pack


class ShortestFirst:
    """Least attained service first, each job at its request (at most max_slots)."""

    name = "shortest-first"  # what --policy, the output folders and the tables call it
    uses_oracle = False  # it reads only what a real scheduler could know

    @dataclass(frozen=True)
    class Options:
        max_slots: int = field(default=0, metadata={
            "help": "most slots one job gets in a round (0: its request)"})

    def __init__(self, config: PolicyConfig) -> None:
        self.options = config.options_for(self)  # Options with --policy-arg values applied
        if self.options.max_slots < 0:
            raise ValueError(f"max_slots={self.options.max_slots}: must be >= 0")
        self.placer = Pack()

    def decide(self, snap: Snapshot) -> Decision:
        free = snap.total_slots
        want: dict[str, int] = {}
        for job in sorted(snap.jobs, key=lambda j: (j.attained_service, j.submit_time)):
            count = min(job.requested_replicas, self.options.max_slots or free, free)
            if count > 0:
                want[job.name] = count
                free -= count
        current = {j.name: j.allocation for j in snap.jobs if j.replicas}
        placed = self.placer.place(want, snap.nodes, current)
        batch = {j.name: j.requested_batch for j in snap.jobs}
        return {name: Assignment(alloc, batch[name])
                for name, alloc in placed.items() if sum(alloc) > 0}
