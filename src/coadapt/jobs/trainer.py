"""One optimizer step of a data-parallel job: micro-batches, DDP sync, gradient
statistics, AdaScale. This is the hot path; it does O(parameters) extra work per
micro-batch and one tiny extra all-reduce per step.

What is timed (all wall seconds, ``time.perf_counter``):
- ``step_time``: from fetching the first micro-batch to the end of
  ``optimizer.step()`` -- forward/backward of every micro-batch, the gradient
  all-reduce, the statistics all-reduce and the update. Event writing and
  validation are outside it.
- ``sync_time``: the blocking gloo all-reduce of the gradient bucket(s) inside
  the DDP comm hook plus the all-reduce of the per-step statistics vector,
  including any wait for slower peers. The gradient bucket is one (bucket cap
  raised above the model size), so communication does not overlap backward
  compute and step_time - sync_time is the compute time.
- ``cpu_time``: ``time.process_time()`` over the same span (all threads of the
  process, so gloo's I/O threads count).

The statistics all-reduce also carries the control flags every rank must agree
on at a step boundary: the stop request (OR-ed as a sum) and rank 0's batch-size
request (only rank 0 contributes, so the sum is its value; 0 = none).
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from coadapt.jobs.data import SampleStream, Split
from coadapt.jobs.evaluate import train_loss
from coadapt.jobs.types import BatchPlan, JobType
from coadapt.models.gradstats import GradStatsEMA, estimate, estimate_differenced


@dataclass
class _SyncState:
    divisor: float
    seconds: float = 0.0


def _timed_allreduce_hook(state, bucket):  # noqa: ANN001, ANN202 (DDP rejects string annotations)
    """Average the bucket over all K micro-batches (not only over ranks) so the
    accumulated .grad becomes the mean gradient of the whole batch M."""
    t0 = time.perf_counter()
    buf = bucket.buffer()
    buf.div_(state.divisor)
    dist.all_reduce(buf)
    state.seconds += time.perf_counter() - t0
    fut = torch.futures.Future()
    fut.set_result(buf)
    return fut


@dataclass
class StepResult:
    step_time: float
    sync_time: float
    cpu_time: float
    loss: float
    gain: float
    lr: float
    raw_sqr: float | None
    raw_var: float | None
    stop: bool
    batch_request: int = 0
    """The batch size rank 0 asked for in this step's all-reduce (0: none)."""


class StepRunner:
    """Runs optimizer steps for one rank; owns the DDP wrapper, hooks and EMA."""

    def __init__(self, job: JobType, model: nn.Module, optimizer: torch.optim.Optimizer,
                 train: Split, plan: BatchPlan, stream: SampleStream, ema: GradStatsEMA,
                 rank: int, world: int) -> None:
        self.job, self.model, self.opt, self.train = job, model, optimizer, train
        self.plan, self.stream, self.ema = plan, stream, ema
        self.rank, self.world = rank, world
        self.params = [p for p in model.parameters() if p.requires_grad]
        self._local = torch.zeros((), dtype=torch.float64)
        for p in self.params:
            p.register_hook(self._grad_hook)
        size_mb = sum(p.numel() * p.element_size() for p in self.params) / 2**20
        self.ddp = DDP(model, bucket_cap_mb=size_mb + 1.0)
        self._sync = _SyncState(divisor=float(plan.micro_batches))
        self.ddp.register_comm_hook(self._sync, _timed_allreduce_hook)
        self._prev: list[torch.Tensor] | None = None
        self._prev_sqr = 0.0

    def set_plan(self, plan: BatchPlan) -> None:
        """Run ``plan`` from the next step on (every rank, at the same step boundary).

        The comm hook averages over the new K; the K = 1 estimator forgets its
        previous gradient, which was taken at another batch scale (or, after a
        K >= 2 stretch, long ago), and pairs the next two K = 1 steps afresh.
        """
        if plan.workers != self.world:
            raise ValueError(f"plan for {plan.workers} workers in a group of {self.world}")
        self.plan = plan
        self._sync.divisor = float(plan.micro_batches)
        self._prev = None
        self._prev_sqr = 0.0

    def _grad_hook(self, grad: torch.Tensor) -> None:
        """Local gradient of one micro-batch, seen before accumulation and sync."""
        flat = grad.reshape(-1)
        self._local.add_(torch.dot(flat, flat))

    def _update_stats(self, local_sum: float) -> tuple[float | None, float | None]:
        plan = self.plan
        grads = [p.grad for p in self.params]
        total_sqr = float(torch.nn.utils.get_total_norm(grads)) ** 2
        k, scale = plan.micro_batches, plan.scale
        if k >= 2:
            sqr, var = estimate(local_sum / k, total_sqr, k, scale)
            self.ema.update(sqr, var, scale)
            return sqr, var
        raw: tuple[float | None, float | None] = (None, None)
        if self._prev is None:
            self._prev = [g.detach().clone() for g in grads]
        else:
            # |g1 + g2|^2 = |g1|^2 + |g2|^2 + 2<g1, g2>, without a temporary sum vector
            cross = sum(float(torch.dot(a.reshape(-1), b.reshape(-1)))
                        for a, b in zip(self._prev, grads, strict=True))
            pair = self._prev_sqr + total_sqr + 2.0 * cross
            sqr, var = estimate_differenced(self._prev_sqr, total_sqr, pair, scale)
            self.ema.update(sqr, var, 2.0 * scale, biased=True)
            torch._foreach_copy_(self._prev, grads)
            raw = (sqr, var)
        self._prev_sqr = total_sqr
        return raw

    def step(self, stop: bool, batch_request: int = 0) -> StepResult:
        """One optimizer step over batch M; ``stop`` is this rank's stop request,
        OR-ed over ranks so that every rank stops after the same step;
        ``batch_request`` is rank 0's requested batch size (0 on other ranks)."""
        t0, c0 = time.perf_counter(), time.process_time()
        plan, r, world = self.plan, self.rank, self.world
        m, passes = plan.micro, plan.accum + 1
        idx = self.stream.take(plan.batch_size)
        self.opt.zero_grad(set_to_none=True)
        self._local.zero_()
        self._sync.seconds = 0.0
        loss_sum = 0.0
        for a in range(passes):
            lo = (a * world + r) * m
            sel = idx[lo: lo + m]
            ctx = self.ddp.no_sync() if a < passes - 1 else nullcontext()
            with ctx:
                loss = train_loss(self.job.task, self.ddp(self.train.inputs[sel]),
                                  self.train.targets[sel])
                loss.backward()
            loss_sum += float(loss.detach())
        ts = time.perf_counter()
        vec = torch.tensor([float(self._local), 1.0 if stop else 0.0, loss_sum,
                            float(batch_request)], dtype=torch.float64)
        dist.all_reduce(vec)
        sync = self._sync.seconds + time.perf_counter() - ts
        raw_sqr, raw_var = self._update_stats(float(vec[0]))
        gain = self.ema.gain(plan.scale)
        if self.job.clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(self.params, self.job.clip_norm)
        lr = self.job.base_lr * gain
        for group in self.opt.param_groups:
            group["lr"] = lr
        self.opt.step()
        return StepResult(step_time=time.perf_counter() - t0, sync_time=sync,
                          cpu_time=time.process_time() - c0,
                          loss=float(vec[2]) / plan.micro_batches, gain=gain, lr=lr,
                          raw_sqr=raw_sqr, raw_var=raw_var, stop=bool(vec[1] > 0),
                          batch_request=round(float(vec[3])))


def make_optimizer(job: JobType, model: nn.Module) -> torch.optim.Optimizer:
    if job.optimizer != "sgd":
        raise ValueError(f"job type {job.name}: optimizer {job.optimizer!r} is not supported")
    return torch.optim.SGD(model.parameters(), lr=job.base_lr, momentum=job.momentum,
                           weight_decay=job.weight_decay)
