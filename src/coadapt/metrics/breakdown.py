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
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

Event = dict[str, Any]
_KINDS = frozenset({"submit", "allocate", "start", "complete"})


class _E(NamedTuple):
    """What the breakdown needs of an event (a log of millions is streamed)."""

    t: float
    kind: str
    replicas: Any
    truth: Any


class Breakdown:
    """The breakdown's accumulator, fed one event at a time (``add``), so that a
    report reads a log once for its tally and its breakdown (``tally_log(also=)``)."""

    def __init__(self) -> None:
        self.per_job: dict[str, list[_E]] = defaultdict(list)

    def add(self, e: Event) -> None:
        if e.get("job") is not None and e["kind"] in _KINDS:
            self.per_job[e["job"]].append(_E(e["t"], e["kind"], e.get("replicas"), e.get("truth")))

    def result(self) -> dict[str, float | None]:
        waits, runs, delays = [], [], []
        slot_time = {"measured": 0.0, "modeled": 0.0}
        for evs in self.per_job.values():
            evs.sort(key=lambda e: e.t)
            submit = next((e.t for e in evs if e.kind == "submit"), None)
            first = next((e.t for e in evs if e.kind == "allocate" and e.replicas), None)
            done = next((e.t for e in evs if e.kind == "complete"), None)
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


def breakdown(events: Iterable[Event]) -> dict[str, float | None]:
    """Mean wait and run seconds over completed jobs, and the modeled share
    of slot-time (None where undefined); ``events`` may be a stream."""
    acc = Breakdown()
    for e in events:
        acc.add(e)
    return acc.result()


def _delays(evs: list[_E]) -> float:
    """Seconds from each allocation with slots to the start that follows it."""
    total = 0.0
    for i, e in enumerate(evs):
        if e.kind == "allocate" and e.replicas:
            nxt = next((x for x in evs[i + 1:] if x.kind in ("start", "allocate", "complete")),
                       None)
            if nxt is not None and nxt.kind == "start":
                total += nxt.t - e.t
    return total


def _slot_time(evs: list[_E], acc: dict[str, float]) -> None:
    """Add one job's slot-seconds per allocation, labelled by the ``truth``
    of the start that follows the allocation."""
    for i, e in enumerate(evs):
        if e.kind != "allocate" or not e.replicas:
            continue
        end = next((x.t for x in evs[i + 1:] if x.kind in ("allocate", "complete")), None)
        start = next((x for x in evs[i + 1:] if x.kind in ("start", "allocate")), None)
        if end is None:
            continue
        truth = start.truth if start is not None and start.kind == "start" else None
        label = "measured" if truth in (None, "measured") else "modeled"
        acc[label] += e.replicas * (end - e.t)
