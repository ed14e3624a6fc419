"""The job types: one registry dict, name -> JobType.

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

from typing import TYPE_CHECKING

from coadapt.jobs.types import ConfigError, JobType

if TYPE_CHECKING:
    from torch import nn

    from coadapt.jobs.data import Data

SEQ_LEN = 64

# Models and data are imported when first built, so that reading the registry
# (the job types' declared limits, for the simulator and the live scheduler)
# does not import torch.


def _mlp() -> nn.Module:
    from coadapt.jobs.nets import MLP

    return MLP(40, 1024, 10, layers=2)


def _cnn() -> nn.Module:
    from coadapt.jobs.nets import SignalCNN

    return SignalCNN(40, channels=384)


def _transformer() -> nn.Module:
    from coadapt.jobs.data import TEXT_CLASSES
    from coadapt.jobs.nets import CharTransformer

    return CharTransformer(TEXT_CLASSES, SEQ_LEN, width=128, heads=4, layers=2)


def _lstm() -> nn.Module:
    from coadapt.jobs.data import TEXT_CLASSES
    from coadapt.jobs.nets import CharLSTM

    return CharLSTM(TEXT_CLASSES, embed=64, hidden=512)


def _prepare_mnist1d() -> None:
    from coadapt.jobs.data import mnist1d_arrays

    mnist1d_arrays()


def _mnist1d() -> Data:
    from coadapt.jobs.data import load_mnist1d as load

    return load()


def _text() -> Data:
    from coadapt.jobs.data import load_text

    return load_text(SEQ_LEN)

JOB_TYPES: dict[str, JobType] = {
    job.name: job
    for job in (
        JobType(
            name="mlp-mnist1d", family="mlp",
            description="2x1024 ReLU MLP on MNIST-1D signals (small)",
            load_data=_mnist1d, build_model=_mlp, prepare=_prepare_mnist1d,
            task="classify", metric="accuracy", target=0.75, higher_is_better=True,
            init_batch_size=32, min_local_bsz=4, max_local_bsz=256, max_batch_size=512,
            eval_every=100.0, dataset_size=8000, base_lr=0.02, params=1_101_834,
        ),
        JobType(
            name="cnn-mnist1d", family="cnn",
            description="3-layer 1D CNN (384 channels) on MNIST-1D signals (small-medium)",
            load_data=_mnist1d, build_model=_cnn, prepare=_prepare_mnist1d,
            task="classify", metric="accuracy", target=0.94, higher_is_better=True,
            init_batch_size=32, min_local_bsz=4, max_local_bsz=256, max_batch_size=512,
            eval_every=100.0, dataset_size=8000, base_lr=0.02, params=907_018,
        ),
        JobType(
            name="transformer-text", family="transformer",
            description="2-layer causal transformer char LM on stdlib sources (medium)",
            load_data=_text, build_model=_transformer, task="lm",
            metric="val_loss", target=1.6, higher_is_better=False,
            init_batch_size=8, min_local_bsz=4, max_local_bsz=128, max_batch_size=128,
            eval_every=400.0, dataset_size=21042, base_lr=0.1, clip_norm=5.0, params=429_921,
        ),
        JobType(
            name="lstm-text", family="lstm",
            description="1-layer 512-unit LSTM char LM on stdlib sources (large)",
            load_data=_text, build_model=_lstm, task="lm",
            metric="val_loss", target=1.13, higher_is_better=False,
            init_batch_size=8, min_local_bsz=4, max_local_bsz=128, max_batch_size=128,
            eval_every=400.0, dataset_size=21042, base_lr=0.5, clip_norm=5.0, params=1_239_713,
        ),
    )
}


def get_job_type(name: str) -> JobType:
    """Look a job type up by name; ConfigError lists the known names."""
    try:
        return JOB_TYPES[name]
    except KeyError:
        known = ", ".join(sorted(JOB_TYPES))
        raise ConfigError("type", f"unknown job type {name!r}; choose one of: {known}") from None
