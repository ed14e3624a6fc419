"""The job types: one registry dict, name -> JobType.

Targets were chosen (benchmarks/jobs_calibrate.py) so that one worker at M0
reaches them in ~20 s to ~10 min on a 2-core machine, and so that statistical
efficiency visibly drops at 16 x M0.
"""

from __future__ import annotations

from functools import partial

from torch import nn

from coadapt.jobs.data import TEXT_CLASSES, load_digits, load_text
from coadapt.jobs.nets import MLP, CharLSTM, CharTransformer, DigitsCNN
from coadapt.jobs.types import ConfigError, JobType

SEQ_LEN = 64


def _mlp() -> nn.Module:
    return MLP(64, 512, 10, layers=2)


def _cnn() -> nn.Module:
    return DigitsCNN(channels=32, hidden=128)


def _lstm() -> nn.Module:
    return CharLSTM(TEXT_CLASSES, embed=64, hidden=256)


def _transformer() -> nn.Module:
    return CharTransformer(TEXT_CLASSES, SEQ_LEN, width=128, heads=4, layers=2)


_text = partial(load_text, SEQ_LEN)

JOB_TYPES: dict[str, JobType] = {
    job.name: job
    for job in (
        JobType(
            name="mlp-digits", family="mlp",
            description="2x512 ReLU MLP on sklearn's 8x8 digits (small)",
            load_data=load_digits, build_model=_mlp, task="classify",
            metric="accuracy", target=0.97, higher_is_better=True,
            init_batch_size=32, min_local_bsz=4, max_local_bsz=256, max_batch_size=1024,
            eval_every=50.0, dataset_size=1438, base_lr=0.02,
        ),
        JobType(
            name="cnn-digits", family="cnn",
            description="2-layer CNN on the 8x8 digit images (medium)",
            load_data=load_digits, build_model=_cnn, task="classify",
            metric="accuracy", target=0.98, higher_is_better=True,
            init_batch_size=32, min_local_bsz=4, max_local_bsz=256, max_batch_size=1024,
            eval_every=50.0, dataset_size=1438, base_lr=0.02,
        ),
        JobType(
            name="transformer-text", family="transformer",
            description="2-layer causal transformer char LM on stdlib sources (medium)",
            load_data=_text, build_model=_transformer, task="lm",
            metric="val_loss", target=2.0, higher_is_better=False,
            init_batch_size=32, min_local_bsz=4, max_local_bsz=128, max_batch_size=1024,
            eval_every=100.0, dataset_size=0, base_lr=0.1, clip_norm=5.0,
        ),
        JobType(
            name="lstm-text", family="lstm",
            description="1-layer 256-unit LSTM char LM on stdlib sources (large)",
            load_data=_text, build_model=_lstm, task="lm",
            metric="val_loss", target=1.6, higher_is_better=False,
            init_batch_size=32, min_local_bsz=4, max_local_bsz=128, max_batch_size=1024,
            eval_every=100.0, dataset_size=0, base_lr=0.5, clip_norm=5.0,
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
