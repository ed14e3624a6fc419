"""Replay the allocations of a recorded run (a live log) in another engine run.

Simulating a live run's workload under the same policy mixes two errors: the
job model's (step times, restarts, completion) and diverging decisions (the
policy saw other numbers, so it chose otherwise, and from then on the runs
differ). Replaying the live run's own allocations in the simulator leaves the
first: the remaining sim-vs-live difference is the job model's.

At each round the replay returns the allocation and batch every job held in
the recorded run after that round's decisions; ``script`` holds the in-place
batch changes the recorded jobs made between rounds, which the modeled
backend replays at their times instead of letting jobs re-tune themselves. A job
that the recorded run had already finished but the replay has not keeps its
last allocation first; recorded allocations that no longer fit wait. It is
not in the policy registry: it needs the log it replays.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from coadapt.eventlog import read_events, run_header
from coadapt.policies.base import Assignment, Decision, Snapshot

if TYPE_CHECKING:
    from coadapt.world.workload import Workload


@dataclass
class ReplayPolicy:
    """Allocations over time per job, from ``allocate`` events."""

    source: str
    timeline: dict[str, tuple[list[float], list[Assignment]]]
    ends: dict[str, float]  # completion time of each job in the recording
    script: dict[str, list[tuple[float, int]]]  # in-place batch changes: (time, batch)
    name: ClassVar[str] = "replay"
    uses_oracle: ClassVar[bool] = False
    _last: dict[str, Assignment] = field(default_factory=dict)

    @classmethod
    def from_log(cls, path: Path, workload: Workload | None = None) -> ReplayPolicy:
        """The recorded run of ``path``; ValueError when the log is empty, lacks
        its header, or (given ``workload``) records another workload's jobs:
        found before a round is simulated, not after hundreds."""
        events = list(read_events(path))
        header = run_header(events, path)
        if workload is not None:
            ours = {j.name for j in workload.jobs}
            theirs = {e["job"] for e in events if e["kind"] == "submit"}
            if not theirs or not theirs <= ours:
                stray = sorted(theirs - ours)[:3]
                raise ValueError(f"--replay {path}: records workload {header.get('workload')!r}"
                                 f", not {workload.name!r} (" + (f"its jobs {', '.join(stray)} are "
                                 "not in it" if stray else "no job was submitted") + "); replay "
                                 "a run of the same workload")
        per_job: dict[str, tuple[list[float], list[Assignment]]] = defaultdict(lambda: ([], []))
        ends = {}
        script: dict[str, list[tuple[float, int]]] = defaultdict(list)
        for e in events:
            if e["kind"] == "complete":
                ends[e["job"]] = float(e["t"])
            # in-place batch changes: live logs them as progress; a simulated job
            # that re-tunes at an epoch boundary logs the new batch with the epoch
            if e["kind"] in ("progress", "epoch") and e.get("batch"):
                script[e["job"]].append((float(e["t"]), int(e["batch"])))
            if e["kind"] != "allocate" or e.get("reason") == "interrupted":
                continue
            times, assigns = per_job[e["job"]]
            times.append(float(e["t"]))
            alloc = tuple(int(a) for a in e["allocation"])
            assigns.append(Assignment(alloc, int(e["batch"]) or None))
        return cls(str(path), dict(per_job), ends, {k: sorted(v) for k, v in script.items()})

    def _recorded(self, job: str, t: float) -> Assignment | None:
        hit = self.timeline.get(job)
        if hit is None:
            return None
        times, assigns = hit
        i = bisect.bisect_right(times, t + 1e-6) - 1
        return assigns[i] if i >= 0 else None

    def decide(self, snap: Snapshot) -> Decision:
        free = np.array(snap.slots_per_node, dtype=int)
        out: Decision = {}
        recorded: list[tuple[str, Assignment]] = []
        for job in snap.jobs:
            if snap.time > self.ends.get(job.name, np.inf):
                # Finished in the recording, not yet here: it keeps its last slots first,
                # being nearly done; waiting behind the recording's later jobs would
                # make a small model error a large one.
                a = self._last.get(job.name) or self._final(job.name)
                if a is not None and np.all(np.array(a.allocation) <= free):
                    out[job.name] = a
                    free -= np.array(a.allocation)
                continue
            a = self._recorded(job.name, snap.time)
            if a is not None and sum(a.allocation):
                recorded.append((job.name, a))
        for name, a in recorded:  # what the recording did, where it still fits
            if np.all(np.array(a.allocation) <= free):
                out[name] = a
                self._last[name] = a
                free -= np.array(a.allocation)
        return out

    def _final(self, job: str) -> Assignment | None:
        """The last allocation with slots the recording gave ``job``."""
        for a in reversed(self.timeline.get(job, ((), ()))[1]):
            if sum(a.allocation):
                return a
        return None
