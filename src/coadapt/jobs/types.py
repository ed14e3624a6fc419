"""What a job type is, and how a (workers, batch) request maps onto micro-batches."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from coadapt.models.batching import JobLimits, split_batch

if TYPE_CHECKING:
    from torch import nn

    from coadapt.jobs.data import Data


class ConfigError(ValueError):
    """A bad job request; ``field`` names the offending input (for exit code 2)."""

    def __init__(self, field: str, message: str | None = None) -> None:
        # One argument is a whole message (how SimPy and pickle re-create errors).
        super().__init__(field if message is None else f"{field}: {message}")
        self.field = field.partition(":")[0] if message is None else field


@dataclass(frozen=True)
class JobType:
    """Model + data + optimizer + validation target + batch-size limits.

    ``eval_every`` is in progress units (iterations at ``init_batch_size``);
    ``max_local_bsz`` bounds one worker's micro-batch, larger per-worker batches use
    gradient accumulation. ``task`` is "classify" (metric accuracy) or "lm"
    (metric: mean validation cross-entropy in nats per character).
    """

    name: str
    family: str
    description: str
    load_data: Callable[[], Data]
    build_model: Callable[[], nn.Module]
    task: str
    metric: str
    target: float
    higher_is_better: bool
    init_batch_size: int
    min_local_bsz: int
    max_local_bsz: int
    max_batch_size: int
    eval_every: float
    dataset_size: int
    base_lr: float
    momentum: float = 0.9
    weight_decay: float = 0.0
    clip_norm: float | None = None
    optimizer: str = "sgd"
    prepare: Callable[[], None] | None = None
    """Run once by the group parent before launching (e.g. build a data cache)."""
    max_replicas: int = 64
    """Most workers the job accepts (the Pollux study's cap)."""
    params: int = 0
    """Trainable parameters of ``build_model()`` (a test checks it): the gradient
    an all-reduce moves is 4 x params bytes (float32)."""

    @property
    def grad_bytes(self) -> int:
        return 4 * self.params

    @property
    def limits(self) -> JobLimits:
        """The declared limits, as schedulers and the simulator see them."""
        return JobLimits(self.init_batch_size, self.max_batch_size, self.min_local_bsz,
                         self.max_local_bsz, self.max_replicas)

    def reached(self, metric: float, target: float | None = None) -> bool:
        goal = self.target if target is None else target
        if math.isnan(metric):
            return False
        return metric >= goal if self.higher_is_better else metric <= goal


@dataclass(frozen=True)
class BatchPlan:
    """Batch M = workers * local_bsz * (accum_steps + 1), as actually run."""

    workers: int
    local_bsz: int
    accum_steps: int
    batch_size: int
    init_batch_size: int

    @property
    def micro_batches(self) -> int:
        """K = R * (s + 1): independent gradient samples per optimizer step."""
        return self.workers * (self.accum_steps + 1)

    @property
    def scale(self) -> float:
        return self.batch_size / self.init_batch_size


def plan_batch(job: JobType, workers: int, batch_size: int) -> BatchPlan:
    """Check a (workers, batch) request against the job type's limits and split
    it as everything else in coadapt does (``models.batching.split_batch``):
    the batch actually run can exceed the request by less than R x (s+1)
    samples (rounding up), never the job's maximum."""
    if workers < 1:
        raise ConfigError("workers", f"must be at least 1 (got {workers})")
    low = workers * job.min_local_bsz
    if batch_size < low:
        raise ConfigError(
            "batch", f"{batch_size} is below {low} = workers x min_local_bsz "
            f"({workers} x {job.min_local_bsz}) for job type {job.name}; "
            "raise the batch or use fewer workers")
    if batch_size > job.max_batch_size:
        raise ConfigError(
            "batch", f"{batch_size} exceeds max_batch_size {job.max_batch_size} of job type "
            f"{job.name}; lower the batch")
    micro, accum = split_batch(batch_size, workers, job.limits)
    local, accum = int(micro), int(accum)
    return BatchPlan(workers=workers, local_bsz=local, accum_steps=accum,
                     batch_size=workers * local * (accum + 1),
                     init_batch_size=job.init_batch_size)
