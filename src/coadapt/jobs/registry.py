"""The runtime job types: one registry dict, name -> JobType.

Each is a declared job type (``coadapt.world.jobtypes``: name, task, target,
limits, size; why those targets and limits) plus its builders: model, data,
optimizer settings. Only the builders are stated here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coadapt.jobs.types import ConfigError, JobType
from coadapt.world.jobtypes import DECLARED_JOB_TYPES

if TYPE_CHECKING:
    from torch import nn

    from coadapt.jobs.data import Data

SEQ_LEN = 64

# Models and data are imported when first built, so that reading the registry
# (e.g. a job type's limits, from the command line) does not import torch.


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


def _runtime(name: str, **builders: Any) -> JobType:
    return JobType.of(DECLARED_JOB_TYPES[name], **builders)


JOB_TYPES: dict[str, JobType] = {
    job.name: job
    for job in (
        _runtime("mlp-mnist1d", load_data=_mnist1d, build_model=_mlp,
                 prepare=_prepare_mnist1d, base_lr=0.02),
        _runtime("cnn-mnist1d", load_data=_mnist1d, build_model=_cnn,
                 prepare=_prepare_mnist1d, base_lr=0.02),
        _runtime("transformer-text", load_data=_text, build_model=_transformer,
                 base_lr=0.1, clip_norm=5.0),
        _runtime("lstm-text", load_data=_text, build_model=_lstm, base_lr=0.5, clip_norm=5.0),
    )
}


def get_job_type(name: str) -> JobType:
    """Look a job type up by name; ConfigError lists the known names."""
    try:
        return JOB_TYPES[name]
    except KeyError:
        known = ", ".join(sorted(JOB_TYPES))
        raise ConfigError("type", f"unknown job type {name!r}; choose one of: {known}") from None
