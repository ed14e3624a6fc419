"""What a live job may ask of its backend: the seam that keeps the job module
from importing the backend module.

The backend owns the experiment clock (and its wall-clock origin), the event
log, the engine's completion calls, the cores, the emulated nodes and the
recipes of their kinds; a job
reads its settings, claims cores, and reports what its group did.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coadapt.backends.live.cores import CorePool
from coadapt.engine.backend import JobHandle
from coadapt.jobs.launch import WorkerRecipe
from coadapt.jobs.netns import Endpoint
from coadapt.world.costs import LIVE_POLL_S


@dataclass(frozen=True)
class LiveSettings:
    """How live jobs are run. ``targets``/``eval_every`` override job types'
    (tiny settings for tests); times in seconds."""

    poll: float = LIVE_POLL_S  # the simulator charges half a poll per reaction (LiveCosts)
    warmup_steps: int = 3  # per launch, as the profiler drops them
    max_retries: int = 3
    worker_timeout: float = 60.0
    exit_grace: float = 20.0
    stop_timeout: float = 60.0  # graceful stop at shutdown before a kill
    seed: int = 0
    targets: Mapping[str, float] = field(default_factory=dict)
    eval_every: Mapping[str, float] = field(default_factory=dict)
    status: bool = True
    network: str = "loopback"  # or "emulated": a namespace per node (backends.live.nodes)


@dataclass(frozen=True)
class LiveServices:
    """What a live job may ask of its backend, handed to it as values and bound
    callables (never the backend itself)."""

    settings: LiveSettings
    pool: CorePool  # claimed when a group launches, released when it has exited
    network: Mapping[str, Any]  # how the group's ranks talk (passed to each launch)
    wall0: Callable[[], float]  # wall time at experiment t = 0 (set when the clock starts)
    interrupting: Callable[[], bool]  # the run is stopping: no more launches
    now: Callable[[], float]  # the experiment time on the wall clock
    endpoints: Callable[[Sequence[int]], tuple[Endpoint, ...] | None]  # ranks' nodes
    emit: Callable[..., None]  # (t, kind, job, **fields): append an event to the log
    complete: Callable[..., None]  # (job, now, **fields): reached its target, verified
    abandon: Callable[[JobHandle, float, str], None]  # (job, now, reason): failed for good
    recipes: Callable[[Sequence[int]], tuple[WorkerRecipe, ...] | None] = lambda _cores: None
    """Each rank's recipe, from its core's node kind (None: plain workers)."""
