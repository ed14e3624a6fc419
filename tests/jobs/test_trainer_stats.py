"""The worker's step (hooks, DDP comm hook, accumulation) against gradients computed
by hand with plain autograd, in a one-rank gloo group inside this process."""

import copy

import pytest
import torch
import torch.distributed as dist

from coadapt.jobs.data import Data, SampleStream, Split
from coadapt.jobs.nets import MLP
from coadapt.jobs.procs import free_port
from coadapt.jobs.trainer import StepRunner, make_optimizer
from coadapt.jobs.types import JobType, plan_batch
from coadapt.models.batching import JobLimits
from coadapt.models.gradstats import GradStatsEMA, estimate, estimate_differenced


@pytest.fixture(scope="module")
def one_rank_group():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}",
                            rank=0, world_size=1)
    yield
    dist.destroy_process_group()


TINY_LIMITS = JobLimits(init_batch_size=4, max_batch_size=64, min_local_bsz=1, max_local_bsz=4,
                        max_replicas=64)


def _job(data: Data) -> JobType:
    return JobType(name="tiny", family="mlp", description="test", load_data=lambda: data,
                   build_model=lambda: MLP(8, 16, 3), task="classify", metric="accuracy",
                   target=1.0, higher_is_better=True, limits=TINY_LIMITS, eval_every=1.0,
                   dataset_size=64, base_lr=0.1, momentum=0.0)


def _grad(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    model.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()]).double()


def _setup(batch: int):
    torch.manual_seed(0)
    split = Split(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    data = Data(split, split, classes=3)
    job = _job(data)
    model = job.build_model()
    ref = copy.deepcopy(model)
    plan = plan_batch(job, 1, batch)
    runner = StepRunner(job, model, make_optimizer(job, model), data.train, plan,
                        SampleStream(64, seed=0), GradStatsEMA(), 0, 1)
    return split, job, model, ref, plan, runner


def test_accumulated_step_matches_manual(one_rank_group) -> None:
    split, job, model, ref, plan, runner = _setup(16)
    assert (plan.micro, plan.accum, plan.micro_batches) == (4, 3, 4)
    idx = SampleStream(64, seed=0).take(16)
    micro = [_grad(ref, split.inputs[idx[a * 4:(a + 1) * 4]], split.targets[idx[a * 4:(a + 1) * 4]])
             for a in range(4)]
    big_l = float(torch.stack([g @ g for g in micro]).mean())
    mean_g = torch.stack(micro).mean(0)
    want_sqr, want_var = estimate(big_l, float(mean_g @ mean_g), 4, 4.0)
    res = runner.step(stop=False)
    assert res.raw_sqr == pytest.approx(want_sqr, rel=1e-4, abs=1e-7)
    assert res.raw_var == pytest.approx(want_var, rel=1e-4)
    assert res.gain == pytest.approx(runner.ema.gain(4.0))
    assert 1.0 <= res.gain <= 4.0
    # plain SGD: theta1 = theta0 - base_lr * gain * mean gradient of the whole batch
    before = torch.cat([p.detach().reshape(-1) for p in ref.parameters()]).double()
    after = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).double()
    assert torch.allclose(after, before - 0.1 * res.gain * mean_g, atol=1e-6)
    assert res.sync_time <= res.step_time and res.cpu_time > 0
    assert not res.stop
    assert runner.step(stop=True).stop


def test_single_sample_uses_consecutive_steps(one_rank_group) -> None:
    split, job, model, ref, plan, runner = _setup(4)
    assert plan.micro_batches == 1
    stream = SampleStream(64, seed=0)
    i1 = stream.take(4)
    g1 = _grad(ref, split.inputs[i1], split.targets[i1])
    first = runner.step(stop=False)
    assert first.raw_sqr is None and first.gain == 1.0 and not runner.ema.ready
    ref.load_state_dict(model.state_dict())
    i2 = stream.take(4)
    g2 = _grad(ref, split.inputs[i2], split.targets[i2])
    second = runner.step(stop=False)
    want = estimate_differenced(float(g1 @ g1), float(g2 @ g2), float((g1 + g2) @ (g1 + g2)), 1.0)
    assert (second.raw_sqr, second.raw_var) == pytest.approx(want, rel=1e-4)
    assert runner.ema.biased
