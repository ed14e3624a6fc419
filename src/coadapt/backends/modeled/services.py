"""What a modeled job may ask of its backend: the seam that keeps the job
module from importing the backend module.

A job knows its own truth and record; the backend owns the clock, the
timers, the event log and the view across jobs (co-location, recorded batch
changes). The job only tells it what happened to itself; the backend decides
which timers to set and what to log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from coadapt.engine.backend import JobHandle
from coadapt.engine.record import JobRecord


@dataclass(frozen=True)
class ModeledServices:
    """The four things a modeled job may ask of its backend, handed to it as
    bound callables (never the backend itself)."""

    restart_delay: Callable[[JobRecord], float]
    """Seconds without progress after this (re)allocation of the record."""
    start_after: Callable[[JobHandle, float], None]
    """Start the job (begin progress, log ``start``) after a delay, unless it
    changed again in between."""
    rebatched: Callable[[JobHandle, float], None]
    """The job changed its batch in place at a time (no restart)."""
    neighbours_changed: Callable[[], None]
    """Allocations changed: co-located jobs may run at another speed."""
