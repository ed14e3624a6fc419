"""Job types, batch planning and the sample order."""

from __future__ import annotations

from dataclasses import fields

import pytest
import torch

from coadapt.jobs.data import SampleStream, epoch_permutation
from coadapt.jobs.registry import JOB_TYPES, get_job_type
from coadapt.jobs.types import ConfigError, plan_batch
from coadapt.world.jobtypes import DECLARED_JOB_TYPES, DeclaredJobType


@pytest.mark.parametrize("name", sorted(JOB_TYPES))
def test_job_type_is_consistent(name: str) -> None:
    job = JOB_TYPES[name]
    data = job.load_data()
    assert len(data.train) == job.dataset_size
    assert len(data.val) > 0
    lim = job.limits
    assert lim.min_local_bsz <= lim.init_batch_size <= lim.max_local_bsz
    assert lim.max_batch_size >= 16 * lim.init_batch_size  # the calibrated range
    model = job.build_model()
    out = model(data.train.inputs[:2])
    assert out.shape[0] == 2 and out.shape[-1] == data.classes
    assert job.reached(job.target) and not job.reached(float("nan"))
    # the declared size is the model's: the network model moves 4 x params bytes
    assert job.params == sum(p.numel() for p in model.parameters() if p.requires_grad)


def test_registry_runs_every_declared_type_as_declared() -> None:
    """The runtime types are the declared ones plus builders: same set, same facts."""
    assert set(JOB_TYPES) == set(DECLARED_JOB_TYPES)
    for name, declared in DECLARED_JOB_TYPES.items():
        job = JOB_TYPES[name]
        assert all(getattr(job, f.name) == getattr(declared, f.name)
                   for f in fields(DeclaredJobType))
        assert job.grad_bytes == declared.grad_bytes == 4 * declared.params


def test_unknown_type_names_the_choices() -> None:
    with pytest.raises(ConfigError, match="choose one of") as exc:
        get_job_type("nope")
    assert exc.value.field == "type"


def test_plan_batch_splits_and_accumulates() -> None:
    job = JOB_TYPES["mlp-mnist1d"]  # local batch 4..256
    p = plan_batch(job, 2, 64)
    assert (p.micro, p.accum, p.batch_size, p.micro_batches) == (32, 0, 64, 2)
    p = plan_batch(job, 1, 512)
    assert (p.micro, p.accum, p.batch_size, p.scale) == (256, 1, 512, 16.0)
    p = plan_batch(job, 3, 500)  # not divisible: nearest feasible, never above the max
    assert p.batch_size == 3 * p.micro * (p.accum + 1)
    assert abs(p.batch_size - 500) < 3 * (p.accum + 1)
    assert plan_batch(job, 3, 512).batch_size <= 512
    p = plan_batch(job, 2, 9)  # 9/2 rounds to 4 or 5 per worker
    assert p.batch_size in (8, 10) and p.micro >= job.limits.min_local_bsz


def test_sample_order_is_independent_of_partitioning() -> None:
    a, b = SampleStream(100, seed=3), SampleStream(100, seed=3)
    seq_a = torch.cat([a.take(7) for _ in range(40)])
    seq_b = torch.cat([b.take(40) for _ in range(7)])
    assert torch.equal(seq_a, seq_b)
    assert torch.equal(seq_a[:100].sort().values, torch.arange(100))
    assert torch.equal(seq_a[100:200], epoch_permutation(100, 3, 1))
    resumed = SampleStream(100, seed=3, epoch=a.epoch, pos=a.pos)
    assert torch.equal(resumed.take(5), a.take(5))
