"""The JSON spec a group parent hands to each of its worker processes."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

SPEC_ENV = "COADAPT_WORKER_SPEC"


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker needs besides its rank (which comes from RANK/WORLD_SIZE).

    ``launch`` numbers the group's launches of this job (job.json): rank 0 only
    applies a ``control.json`` addressed to its own launch. ``timeout_s`` is the
    gloo timeout of the rendezvous and of every collective."""

    job_type: str
    job_id: str
    ckpt_dir: str
    events: str | None
    workers: int
    batch_size: int
    seed: int
    resume: bool
    parent_pid: int
    max_steps: int | None = None
    target: float | None = None
    eval_every: float | None = None
    timeout_s: float = 300.0
    launch: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WorkerSpec:
        return cls(**json.loads(text))
