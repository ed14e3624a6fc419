"""The parent's side of changing a running group's batch size in place.

A request goes through ``control.json`` in the checkpoint directory
(``checkpoint.write_control``) and takes effect at the same step boundary on
every rank (``coadapt.jobs.loop`` reads it, ``checkpoint.ControlFile``). A
control file left by an earlier launch never applies to a later one: each
launch deletes it before starting (``clear``), and each request names the
launch it is for and a sequence number increasing within that launch.
"""

from __future__ import annotations

import operator
from pathlib import Path

from coadapt.jobs.checkpoint import CONTROL_FILE, write_control
from coadapt.jobs.types import BatchPlan, ConfigError, JobType, plan_batch


class BatchControl:
    """The batch a launch was last asked to run, how it is split, and the requests
    written for it. The constructor checks the launch's own batch (ConfigError)."""

    def __init__(self, job: JobType, workers: int, ckpt_dir: str | Path, batch_size: int) -> None:
        self.job, self.workers, self.dir = job, workers, Path(ckpt_dir)
        self.plan: BatchPlan = plan_batch(job, workers, batch_size)
        self.batch = batch_size
        self.seq = 0

    def clear(self) -> None:
        """Delete an earlier launch's request: a new launch runs its own batch."""
        (self.dir / CONTROL_FILE).unlink(missing_ok=True)

    def check(self, batch_size: int) -> tuple[int, BatchPlan]:
        """The request as an int and its plan; ConfigError if the job cannot run it."""
        try:
            batch = operator.index(batch_size)
        except TypeError:
            raise ConfigError("batch", f"must be an integer (got {batch_size!r})") from None
        return batch, plan_batch(self.job, self.workers, batch)

    def send(self, batch: int, plan: BatchPlan, launch: int) -> int:
        """Replace ``control.json`` atomically with the request; returns its seq."""
        self.seq += 1
        write_control(self.dir, batch_size=batch, seq=self.seq, launch=launch)
        self.batch, self.plan = batch, plan
        return self.seq
