"""What each CPU job type declares: the facts a scheduler or simulator may know.

A job type's name, task, validation target, batch limits and gradient size are
declarations, not measurements, and the world below the job runtime needs them
(declared limits, the network truth's gradient bytes) without importing torch.
They live here, once; ``coadapt.jobs.registry`` adds the builders (model,
data, optimizer settings) to make the runtime ``JobType`` of each.

Targets were chosen with benchmarks/jobs_calibrate.py so that one worker at M0
reaches them in ~30 s (mlp), ~50 s (cnn), ~1.7 min (transformer) and ~6 min
(lstm) on an idle 2-core machine, spread like small / medium / large jobs, and
so that statistical efficiency visibly drops at 16 x M0. Two limits shaped
them (both measured):

* The MNIST-1D targets sit just below what a 16 x M0 batch can reach: at 512
  the CNN plateaus at ~0.943 accuracy (0.966 at M0), so 0.94 is as high as
  its target can go, and the MLP plateaus near 0.77. The models are sized
  (MLP 2x1024, CNN 384 channels) to make those targets take ~30 s and ~50 s.
* The full profile (``make profile``) must run every type to target at M0,
  4 x M0 and 16 x M0 in under 45 min. The LSTM at 1.13 costs ~17 min of it
  (M0, 4x, 16x and a second M0 seed, on 2 workers); a job taking 10 min at
  M0 would cost ~28 min and leave no room for the others' runs and seeds.

The text types start at M0 = 8 sequences (512 characters), not 32: their
gradient noise scale is only ~4-10 sequences early in training, so at M0 = 32
a 16 x M0 batch (512) needed ~10x the samples of M0 and a single run to
target at 16 x M0 took 15-20 min, more than a whole profiling budget allows.
At M0 = 8 the same models reached the then targets (val loss 1.6 / 1.2) with
~25k samples at M0 and 2-3x that at 16 x M0 (measured), which is the regime
Pollux's jobs live in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from coadapt.models.batching import JobLimits


@dataclass(frozen=True)
class DeclaredJobType:
    """A job type as schedulers and the simulator see it.

    ``eval_every`` is in progress units (iterations at ``limits.init_batch_size``).
    ``task`` is "classify" (metric accuracy) or "lm" (metric: mean validation
    cross-entropy in nats per character). ``params``: trainable parameters of
    the model (a test checks the runtime model has them)."""

    name: str
    family: str
    description: str
    task: str
    metric: str
    target: float
    higher_is_better: bool
    limits: JobLimits
    eval_every: float
    dataset_size: int
    params: int = 0

    @property
    def grad_bytes(self) -> int:
        """Bytes an all-reduce moves per step: the float32 gradient."""
        return 4 * self.params

    def reached(self, metric: float, target: float | None = None) -> bool:
        goal = self.target if target is None else target
        if math.isnan(metric):
            return False
        return metric >= goal if self.higher_is_better else metric <= goal


# Every type accepts up to 64 replicas, the Pollux study's cap.
DECLARED_JOB_TYPES: dict[str, DeclaredJobType] = {
    job.name: job
    for job in (
        DeclaredJobType(
            name="mlp-mnist1d", family="mlp",
            description="2x1024 ReLU MLP on MNIST-1D signals (small)",
            task="classify", metric="accuracy", target=0.75, higher_is_better=True,
            limits=JobLimits(init_batch_size=32, max_batch_size=512, min_local_bsz=4,
                             max_local_bsz=256, max_replicas=64),
            eval_every=100.0, dataset_size=8000, params=1_101_834,
        ),
        DeclaredJobType(
            name="cnn-mnist1d", family="cnn",
            description="3-layer 1D CNN (384 channels) on MNIST-1D signals (small-medium)",
            task="classify", metric="accuracy", target=0.94, higher_is_better=True,
            limits=JobLimits(init_batch_size=32, max_batch_size=512, min_local_bsz=4,
                             max_local_bsz=256, max_replicas=64),
            eval_every=100.0, dataset_size=8000, params=907_018,
        ),
        DeclaredJobType(
            name="transformer-text", family="transformer",
            description="2-layer causal transformer char LM on stdlib sources (medium)",
            task="lm", metric="val_loss", target=1.6, higher_is_better=False,
            limits=JobLimits(init_batch_size=8, max_batch_size=128, min_local_bsz=4,
                             max_local_bsz=128, max_replicas=64),
            eval_every=400.0, dataset_size=21042, params=429_921,
        ),
        DeclaredJobType(
            name="lstm-text", family="lstm",
            description="1-layer 512-unit LSTM char LM on stdlib sources (large)",
            task="lm", metric="val_loss", target=1.13, higher_is_better=False,
            limits=JobLimits(init_batch_size=8, max_batch_size=128, min_local_bsz=4,
                             max_local_bsz=128, max_replicas=64),
            eval_every=400.0, dataset_size=21042, params=1_239_713,
        ),
    )
}
