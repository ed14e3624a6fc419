"""What a job type is, and how a (workers, batch) request maps onto micro-batches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from coadapt.models.batching import split_batch
from coadapt.world.jobtypes import DeclaredJobType

if TYPE_CHECKING:
    from torch import nn

    from coadapt.jobs.data import Data


class ConfigError(ValueError):
    """A bad job request; ``field`` names the offending input (for exit code 2)."""

    def __init__(self, field: str, message: str | None = None) -> None:
        # One argument is a whole message (how SimPy and pickle re-create errors).
        super().__init__(field if message is None else f"{field}: {message}")
        self.field = field.partition(":")[0] if message is None else field


@dataclass(frozen=True, kw_only=True)
class JobType(DeclaredJobType):
    """A declared job type (``coadapt.world.jobtypes``) plus how to run it:
    model, data and optimizer settings. ``max_local_bsz`` bounds one worker's
    micro-batch; larger per-worker batches use gradient accumulation."""

    load_data: Callable[[], Data]
    build_model: Callable[[], nn.Module]
    base_lr: float
    momentum: float = 0.9
    weight_decay: float = 0.0
    clip_norm: float | None = None
    optimizer: str = "sgd"
    prepare: Callable[[], None] | None = None
    """Run once by the group parent before launching (e.g. build a data cache)."""

    @classmethod
    def of(cls, declared: DeclaredJobType, **runtime: Any) -> JobType:
        """The runtime type of ``declared``: its facts as declared, plus ``runtime``
        (builders and optimizer settings), so nothing is stated twice."""
        facts = {f.name: getattr(declared, f.name) for f in fields(DeclaredJobType)}
        return cls(**facts, **runtime)



@dataclass(frozen=True)
class BatchPlan:
    """Batch M = workers * micro * (accum + 1), as actually run."""

    workers: int
    micro: int
    accum: int
    batch_size: int
    init_batch_size: int

    @property
    def micro_batches(self) -> int:
        """K = R * (s + 1): independent gradient samples per optimizer step."""
        return self.workers * (self.accum + 1)

    @property
    def scale(self) -> float:
        return self.batch_size / self.init_batch_size


def plan_batch(job: DeclaredJobType, workers: int, batch_size: int) -> BatchPlan:
    """Check a (workers, batch) request against the job type's limits and split
    it as everything else in coadapt does (``models.batching.split_batch``):
    the batch actually run can exceed the request by less than R x (s+1)
    samples (rounding up), never the job's maximum."""
    if workers < 1:
        raise ConfigError("workers", f"must be at least 1 (got {workers})")
    lim = job.limits
    low = workers * lim.min_local_bsz
    if batch_size < low:
        raise ConfigError(
            "batch", f"{batch_size} is below {low} = workers x min_local_bsz "
            f"({workers} x {lim.min_local_bsz}) for job type {job.name}; "
            "raise the batch or use fewer workers")
    if batch_size > lim.max_batch_size:
        raise ConfigError(
            "batch", f"{batch_size} exceeds max_batch_size {lim.max_batch_size} of job type "
            f"{job.name}; lower the batch")
    m, s = split_batch(batch_size, workers, lim)
    micro, accum = int(m), int(s)
    return BatchPlan(workers=workers, micro=micro, accum=accum,
                     batch_size=workers * micro * (accum + 1),
                     init_batch_size=lim.init_batch_size)
