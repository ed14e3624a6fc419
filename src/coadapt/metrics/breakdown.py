"""Where a run's job time went, and how much of it the simulator measured.

JCT = waiting for the first slots + running; of the running, ``delay`` is
the time between an allocation and the job's next training step (process
start, restarts). The split tells whether a policy wins by starting jobs
sooner, by restarting less, or by running them faster. ``modeled_frac`` is
the share of slot-time on placements whose step time was not measured
(``start`` events carry ``truth``): how much of a result rests on the
declared network model or on extrapolation. Read from the log alone.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

Event = dict[str, Any]


def breakdown(events: list[Event]) -> dict[str, float | None]:
    """Mean wait and run seconds over completed jobs, and the modeled share
    of slot-time (None where undefined)."""
    per_job: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        if e.get("job") is not None and e["kind"] in ("submit", "allocate", "start", "complete"):
            per_job[e["job"]].append(e)
    waits, runs, delays = [], [], []
    slot_time = {"measured": 0.0, "modeled": 0.0}
    for evs in per_job.values():
        evs.sort(key=lambda e: e["t"])
        submit = next((e["t"] for e in evs if e["kind"] == "submit"), None)
        first = next((e["t"] for e in evs if e["kind"] == "allocate" and e.get("replicas")), None)
        done = next((e["t"] for e in evs if e["kind"] == "complete"), None)
        if submit is not None and first is not None and done is not None:
            waits.append(first - submit)
            runs.append(done - first)
            delays.append(_delays(evs))
        _slot_time(evs, slot_time)
    total = slot_time["measured"] + slot_time["modeled"]
    return {
        "wait_mean": float(np.mean(waits)) if waits else None,
        "run_mean": float(np.mean(runs)) if runs else None,
        "delay_mean": float(np.mean(delays)) if delays else None,
        "modeled_frac": slot_time["modeled"] / total if total > 0 else None,
    }


def _delays(evs: list[Event]) -> float:
    """Seconds from each allocation with slots to the start that follows it."""
    total = 0.0
    for i, e in enumerate(evs):
        if e["kind"] == "allocate" and e.get("replicas"):
            nxt = next((x for x in evs[i + 1:] if x["kind"] in ("start", "allocate", "complete")),
                       None)
            if nxt is not None and nxt["kind"] == "start":
                total += nxt["t"] - e["t"]
    return total


def _slot_time(evs: list[Event], acc: dict[str, float]) -> None:
    """Add one job's slot-seconds per allocation, labelled by the ``truth``
    of the start that follows the allocation."""
    for i, e in enumerate(evs):
        if e["kind"] != "allocate" or not e.get("replicas"):
            continue
        end = next((x["t"] for x in evs[i + 1:] if x["kind"] in ("allocate", "complete")), None)
        start = next((x for x in evs[i + 1:] if x["kind"] in ("start", "allocate")), None)
        if end is None:
            continue
        truth = start.get("truth") if start is not None and start["kind"] == "start" else None
        label = "measured" if truth in (None, "measured") else "modeled"
        acc[label] += e["replicas"] * (end - e["t"])
