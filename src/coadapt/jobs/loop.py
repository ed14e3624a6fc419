"""The training loop of one rank: restore, step, observe, rebatch, validate,
checkpoint, stop.

Rebatching (AdaptDL-style, in place, no restart): the group parent writes
``control.json`` = {"batch_size", "seq", "launch"}; rank 0 stats it before
every step and contributes the requested batch to the step's statistics
all-reduce (``StepRunner.step``). After that step every rank sees the same
request, re-plans with ``plan_batch`` and, if the plan changed, runs the new
one from the next step on; rank 0 logs one ``progress`` event (reason
"rebatch"). A request addressed to another launch is ignored, so a stale file
can never change a relaunch's batch (the parent also deletes it at start).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from coadapt.eventlog import EventLog
from coadapt.jobs.checkpoint import (
    CKPT_FILE,
    CONTROL_FILE,
    JOB_FILE,
    STATUS_FILE,
    ControlFile,
    atomic_save,
    atomic_write_json,
    load_checkpoint,
    read_json,
)
from coadapt.jobs.data import SampleStream
from coadapt.jobs.evaluate import evaluate
from coadapt.jobs.registry import get_job_type
from coadapt.jobs.spec import WorkerSpec
from coadapt.jobs.trainer import StepRunner, make_optimizer
from coadapt.jobs.types import BatchPlan, ConfigError, plan_batch
from coadapt.models.gradstats import GradStatsEMA

log = logging.getLogger(__name__)

CKPT_FORMAT = 1


class TrainLoop:
    """State that survives a restart lives in ``self.state`` and in the checkpoint."""

    def __init__(self, spec: WorkerSpec, rank: int, world: int, stop: threading.Event) -> None:
        self.spec, self.rank, self.world, self.stop = spec, rank, world, stop
        self.job = get_job_type(spec.job_type)
        self.plan = plan_batch(self.job, world, spec.batch_size)
        self.dir = Path(spec.ckpt_dir)
        meta = read_json(self.dir / JOB_FILE) or {}
        self.first_start = float(meta.get("first_start_wall", time.time()))
        self.target = spec.target if spec.target is not None else self.job.target
        self.eval_every = spec.eval_every or self.job.eval_every
        # Per-step observations are flushed but not fsynced (an fsync costs ~0.5 ms, ~10%
        # of a small job's step); every other event is fsynced, which also forces the
        # observations before it to disk (same file).
        on = rank == 0 and spec.events is not None
        self.events = EventLog(spec.events, fsync=True) if on else None
        self.observations = EventLog(spec.events, fsync=False) if on else None
        self.control = ControlFile(self.dir / CONTROL_FILE) if rank == 0 else None
        self._request = 0  # rank 0: the valid request in control.json (0: none)
        self._handled = 0  # every rank: the last request it re-planned for

    def t(self) -> float:
        return time.time() - self.first_start

    def emit(self, kind: str, **fields: Any) -> None:
        log_ = self.observations if kind == "observation" else self.events
        if log_ is not None:
            log_.emit(self.t(), kind, self.spec.job_id, **fields)

    def batch_request(self) -> int:
        """Rank 0: the batch size control.json asks this launch for (0: none, or
        not valid for this job and group -- checked here, so that the other ranks
        only ever see valid requests). One stat per call; re-read on change."""
        if self.control is None or not self.control.poll():
            return self._request
        ctl, self._request = self.control.value, 0
        if ctl is None:
            return 0
        if ctl.get("launch") != self.spec.launch:
            log.warning("ignoring control.json of launch %s (this is launch %d): %s",
                        ctl.get("launch"), self.spec.launch, ctl)
            return 0
        batch = ctl.get("batch_size")
        if not isinstance(batch, int) or isinstance(batch, bool):
            log.warning("ignoring control.json without an integer batch_size: %s", ctl)
            return 0
        try:
            plan_batch(self.job, self.world, batch)
        except ConfigError as exc:
            log.warning("ignoring control.json: %s", exc)
            return 0
        self._request = batch
        return batch

    def rebatch(self, runner: StepRunner, request: int, run_step: int) -> None:
        """Every rank, after the step whose all-reduce carried ``request``: switch
        to its plan if it differs from the current one (same decision on all ranks,
        since plan_batch is deterministic and the request is the all-reduced sum).
        A standing request is re-sent every step; it is planned once."""
        if request == self._handled:
            return
        self._handled = request
        plan = plan_batch(self.job, self.world, request)
        old: BatchPlan = self.plan
        if plan == old:
            return
        runner.set_plan(plan)
        self.plan = plan
        st = self.state
        log.info("rebatch at step %d: batch %d -> %d (local %d x %d micro-steps), "
                 "requested %d", st["step"], old.batch_size, plan.batch_size, plan.micro,
                 plan.accum + 1, request)
        seq = (self.control.value or {}).get("seq") if self.control is not None else None
        self.emit("progress", reason="rebatch", step=st["step"], run_step=run_step,
                  batch_size=plan.batch_size, local_bsz=plan.micro,
                  accum_steps=plan.accum, workers=self.world, requested=request,
                  previous_batch_size=old.batch_size, seq=seq, progress=st["progress"],
                  samples=st["samples"])

    def run(self) -> str:
        job, spec = self.job, self.spec
        data = job.load_data()
        torch.manual_seed(spec.seed)
        model = job.build_model()
        opt = make_optimizer(job, model)
        ckpt = load_checkpoint(self.dir) if spec.resume else None
        st: dict[str, Any] = {"progress": 0.0, "samples": 0, "step": 0, "epoch": 0, "pos": 0,
                              "next_eval": self.eval_every, "metric": None}
        ema = GradStatsEMA()
        if ckpt is not None:
            model.load_state_dict(ckpt["model"])
            opt.load_state_dict(ckpt["optimizer"])
            ema = GradStatsEMA.from_state_dict(ckpt["gradstats"])
            st = {k: ckpt[k] for k in st}
            st["next_eval"] = (math.floor(st["progress"] / self.eval_every) + 1) * self.eval_every
            torch.set_rng_state(ckpt["rng_torch"])
        self.state, self.model, self.opt, self.ema = st, model, opt, ema
        stream = SampleStream(len(data.train), spec.seed, st["epoch"], st["pos"])
        runner = StepRunner(job, model, opt, data.train, self.plan, stream, ema, self.rank,
                            self.world)
        log.info("ready: %s at step %d, progress %.1f; %d workers, batch %d",
                 "resumed" if ckpt is not None else "fresh", st["step"], st["progress"],
                 self.world, self.plan.batch_size)
        run_steps = 0
        while True:
            plan = self.plan
            res = runner.step(self.stop.is_set(), self.batch_request())
            run_steps += 1
            st["step"] += 1
            st["progress"] += res.gain
            st["samples"] += plan.batch_size
            st["epoch"], st["pos"] = stream.epoch, stream.pos
            self.emit("observation", step=st["step"], run_step=run_steps,
                      step_time=res.step_time, sync_time=res.sync_time, cpu_time=res.cpu_time,
                      local_bsz=plan.micro, accum_steps=plan.accum,
                      batch_size=plan.batch_size, workers=self.world,
                      grad_sqr=ema.sqr, grad_var=ema.var, raw_sqr=res.raw_sqr,
                      raw_var=res.raw_var, gain=res.gain, lr=res.lr, loss=res.loss,
                      progress=st["progress"], samples=st["samples"], epoch=st["epoch"])
            if res.batch_request:
                self.rebatch(runner, res.batch_request, run_steps)
            status = None
            validated = st["progress"] >= st["next_eval"]
            if validated:
                t0 = time.perf_counter()
                st["metric"] = evaluate(model, data.val, job.task, rank=self.rank,
                                        world=self.world)
                st["next_eval"] = (math.floor(st["progress"] / self.eval_every) + 1) \
                    * self.eval_every
                reached = job.reached(st["metric"], self.target)
                self.emit("validation", step=st["step"], metric=st["metric"],
                          metric_name=job.metric, target=self.target, reached=reached,
                          progress=st["progress"], samples=st["samples"],
                          eval_time=time.perf_counter() - t0)
                if reached:
                    status = "complete"
            if status is None and res.stop:
                status = "preempted"
            if status is None and spec.max_steps is not None and run_steps >= spec.max_steps:
                status = "max_steps"
            if status is not None:
                self.checkpoint(status)
                self.write_status(status)
                dist.barrier()
                return status
            if validated:
                self.checkpoint("periodic")

    def checkpoint(self, reason: str) -> None:
        """Rank 0 writes the full state atomically; all ranks hold the same state."""
        if self.rank != 0:
            return
        t0 = time.perf_counter()
        st, job, plan = self.state, self.job, self.plan
        metric = st["metric"]
        obj = {
            "format": CKPT_FORMAT, "job_type": job.name, "job_id": self.spec.job_id,
            "seed": self.spec.seed, "target": self.target, "metric_name": job.metric,
            "higher_is_better": job.higher_is_better, "reason": reason,
            "reached": metric is not None and job.reached(metric, self.target),
            "model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
            "gradstats": self.ema.state_dict(), "rng_torch": torch.get_rng_state(),
            "first_start_wall": self.first_start, "elapsed": self.t(),
            "workers": self.world, "batch_size": plan.batch_size,
            "local_bsz": plan.micro, "accum_steps": plan.accum,
            **st,
        }
        size = atomic_save(obj, self.dir / CKPT_FILE)
        self.emit("checkpoint", reason=reason, step=st["step"], progress=st["progress"],
                  samples=st["samples"], bytes=size, seconds=time.perf_counter() - t0)

    def write_status(self, status: str) -> None:
        if self.rank != 0:
            return
        st = self.state
        atomic_write_json(self.dir / STATUS_FILE, {
            "status": status, "step": st["step"], "progress": st["progress"],
            "samples": st["samples"], "metric": st["metric"], "target": self.target,
            "t": self.t()})
