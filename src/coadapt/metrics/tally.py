"""One pass over an event log, keeping only what the metrics need.

A log of the whole Philly trace holds millions of events (an epoch event per
job per epoch, an allocation with an entry per node); held as dicts they took
gigabytes. ``Tally`` reads the events as a stream and keeps, per job, its
submission, completion and yardstick, and, per event that moves the cluster's
used slots or goodput, four numbers in arrays. ``metrics.compute`` builds the
job table, the timeline and the summary from a tally, so a list of events and
a streamed log give the same figures.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Event = dict[str, Any]
_ALLOCATE, _GOODPUT, _COMPLETE = 0, 1, 2
_GOODPUT_KINDS = frozenset({"start", "epoch", "progress"})


@dataclass
class Tally:
    header: Event | None = None
    submits: dict[str, tuple[float, Any, float]] = field(default_factory=dict)
    """job -> (t, application, weight) of its (last) submission, in first-seen order."""
    completes: dict[str, tuple[float, Any, Any]] = field(default_factory=dict)
    """job -> (t, restarts, verified) of its (last) completion."""
    yardstick: dict[str, tuple[Any, Any, Any]] = field(default_factory=dict)
    """job -> (share, t_iso, n_avg) of its fairness event."""
    ran_on: dict[str, dict[str, None]] = field(default_factory=dict)
    submit_t: array = field(default_factory=lambda: array("d"))
    complete_t: array = field(default_factory=lambda: array("d"))
    adjusted: int = 0
    decision_ms: array = field(default_factory=lambda: array("d"))
    ends: list[Event] = field(default_factory=list)
    fails: list[Event] = field(default_factory=list)
    # the cluster's timeline: per event that changes it, (t, job, what, value)
    _t: array = field(default_factory=lambda: array("d"))
    _job: array = field(default_factory=lambda: array("q"))
    _what: array = field(default_factory=lambda: array("b"))
    _value: array = field(default_factory=lambda: array("d"))
    _ids: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, events: Iterable[Event]) -> Tally:
        tally = cls()
        for e in events:
            tally.add(e)
        return tally

    def _mark(self, e: Event, what: int, value: float) -> None:
        self._t.append(e["t"])
        self._job.append(self._ids.setdefault(e["job"], len(self._ids)))
        self._what.append(what)
        self._value.append(value)

    def add(self, e: Event) -> None:
        kind, job = e["kind"], e.get("job")
        if kind == "header":
            if self.header is None:
                self.header = e
        elif kind == "submit":
            self.submits[job] = (e["t"], e.get("application"), float(e.get("weight", 1.0)))
            self.submit_t.append(e["t"])
            self.adjusted += "adjusted_replicas" in e
        elif kind == "complete":
            self.completes[job] = (e["t"], e.get("restarts"), e.get("verified"))
            self.complete_t.append(e["t"])
            if job:
                self._mark(e, _COMPLETE, 0.0)
        elif kind == "allocate":
            if "node_kind" in e:
                self.ran_on.setdefault(job, {})[e["node_kind"]] = None
            if job:
                self._mark(e, _ALLOCATE, e["replicas"])
        elif kind in _GOODPUT_KINDS:
            if job and e.get("goodput") is not None:
                self._mark(e, _GOODPUT, e["goodput"])
        elif kind == "fairness":
            self.yardstick[job] = (e.get("share"), e.get("t_iso"), e.get("n_avg"))
        elif kind == "round":
            self.decision_ms.append(e["decision_ms"])
        elif kind == "end":
            self.ends.append(e)
        elif kind == "fail":
            self.fails.append(e)

    def changes(self) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
        """(used-slot changes, goodput changes) as (time, delta), the events
        taken in time order (stably: ties in log order)."""
        t, job = np.frombuffer(self._t), np.frombuffer(self._job, dtype=np.int64)
        what, value = np.frombuffer(self._what, dtype=np.int8), np.frombuffer(self._value)
        slots: list[tuple[float, float]] = []
        good_changes: list[tuple[float, float]] = []
        held: dict[int, float] = defaultdict(float)
        good: dict[int, float] = defaultdict(float)
        for i in np.argsort(t, kind="stable").tolist():
            at, name, w, v = float(t[i]), int(job[i]), int(what[i]), float(value[i])
            if w == _ALLOCATE:
                slots.append((at, v - held[name]))
                held[name] = v
                good_changes.append((at, -good[name]))
                good[name] = 0.0
            elif w == _GOODPUT:
                good_changes.append((at, v - good[name]))
                good[name] = v
            else:
                slots.append((at, -held[name]))
                good_changes.append((at, -good[name]))
                held[name] = good[name] = 0.0
        return slots, good_changes
