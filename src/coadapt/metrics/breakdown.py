"""Where a run's job time went, and how much of it the simulator measured.

JCT = waiting for the first slots + running (restarts included). The split
tells whether a policy wins by starting jobs sooner or by running them
faster. ``modeled_frac`` is the share of slot-time spent on placements whose
step time was not measured (``start`` events carry ``truth``), so every
result says how much of it rests on the declared network model or on
extrapolation. Read from the event log alone, like every other metric.
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
    waits, runs = [], []
    slot_time = {"measured": 0.0, "modeled": 0.0}
    for evs in per_job.values():
        evs.sort(key=lambda e: e["t"])
        submit = next((e["t"] for e in evs if e["kind"] == "submit"), None)
        first = next((e["t"] for e in evs if e["kind"] == "allocate" and e.get("replicas")), None)
        done = next((e["t"] for e in evs if e["kind"] == "complete"), None)
        if submit is not None and first is not None and done is not None:
            waits.append(first - submit)
            runs.append(done - first)
        _slot_time(evs, slot_time)
    total = slot_time["measured"] + slot_time["modeled"]
    return {
        "wait_mean": float(np.mean(waits)) if waits else None,
        "run_mean": float(np.mean(runs)) if runs else None,
        "modeled_frac": slot_time["modeled"] / total if total > 0 else None,
    }


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
