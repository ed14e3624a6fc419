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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from coadapt.eventlog import checked_run, read_events

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
    last_t: float | None = None
    """The latest time of any event (None: no event)."""
    # the cluster's timeline: per event that changes it, (t, job, what, value)
    _t: array = field(default_factory=lambda: array("d"))
    _job: array = field(default_factory=lambda: array("q"))
    _what: array = field(default_factory=lambda: array("b"))
    _value: array = field(default_factory=lambda: array("d"))
    _ids: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, events: Iterable[Event], also: Callable[[Event], None] | None = None) -> Tally:
        """The tally of ``events``; ``also`` (another accumulator) is handed each
        event too, so that both are filled in one pass over a log."""
        tally = cls()
        for e in events:
            tally.add(e)
            if also is not None:
                also(e)
        return tally

    def _mark(self, e: Event, what: int, value: float) -> None:
        self._t.append(e["t"])
        self._job.append(self._ids.setdefault(e["job"], len(self._ids)))
        self._what.append(what)
        self._value.append(value)

    def add(self, e: Event) -> None:
        kind, job = e["kind"], e.get("job")
        if self.last_t is None or e["t"] > self.last_t:
            self.last_t = e["t"]
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

    def changes(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """((times, used-slot deltas), (times, goodput deltas)), the events
        taken in time order (stably: ties in log order), as arrays: a log of
        millions of events gives two pairs of arrays, not lists of tuples."""
        t = np.frombuffer(self._t)
        order = np.argsort(t, kind="stable")
        t, job = t[order], np.frombuffer(self._job, dtype=np.int64)[order]
        what, value = np.frombuffer(self._what, dtype=np.int8)[order], np.frombuffer(self._value)[order]
        holds = what != _GOODPUT  # allocations and completions move the used slots
        slots = np.where(what == _ALLOCATE, value, 0.0)[holds]
        good = np.where(what == _GOODPUT, value, 0.0)  # an allocation or completion resets it
        return (t[holds], _deltas(job[holds], slots)), (t, _deltas(job, good))



def tally_log(path: str | Path, also: Callable[[Event], None] | None = None) -> Tally:
    """The tally of one run's log, read in one streamed pass (``also`` as for
    ``Tally.of``); ValueError naming the file and line when it is unreadable,
    cut or holds two runs."""
    return Tally.of(checked_run(read_events(path), path), also)


def _deltas(job: np.ndarray, level: np.ndarray) -> np.ndarray:
    """Per event (in time order), the job's new level minus its level before
    (0 before its first event)."""
    if not len(job):
        return np.zeros(0)
    order = np.lexsort((np.arange(len(job)), job))  # by job, then by time order
    lv, jb = level[order], job[order]
    prev = np.concatenate([[0.0], lv[:-1]])
    prev[np.concatenate([[True], jb[1:] != jb[:-1]])] = 0.0
    out = np.empty_like(lv)
    out[order] = lv - prev
    return out
