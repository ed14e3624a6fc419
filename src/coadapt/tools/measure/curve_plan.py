"""Budgeted runs to target: which runs, in what order, and how many steps each may take.

Runs to target dominate profiling time, and their cost differs by orders of
magnitude between job types (seconds for the MNIST-1D jobs, many minutes for
the text jobs at 16 x M0). A fixed wall-clock budget is split into tiers, most
important first: M0 (seed 0) of every type, then 4M0 and 16M0, extending
finished curves so every batch size has as many validation rows as the
longest one (the simulator aligns rows by index), extra seeds at the core
sizes (phi spread; M0 first), extra batch sizes (2M0, 8M0, 32M0). Tier deadlines are
cumulative, so time a tier leaves unused flows to the next. Inside a tier the
cheapest runs go first. A run's time share is what it is predicted to need
(AdaScale keeps progress-to-target roughly constant across batch sizes, so the
M0 curve and the gain r(S) predict the steps; the timing grid prices them) if
that fits, an equal share of the tier's remaining time if there is no
prediction yet, and, for the core batch sizes only, a short probe (a validation
row, for phi and the metric at that batch) if it cannot fit; other runs that
cannot fit are skipped. Shares are enforced twice: by capping optimizer steps
(priced by the timing grid) and by a wall-clock limit on the launch, past
which the group checkpoints and stops; no launch outlives the total budget
except a forced M0 run (without which no profile loads). A capped run keeps
its curve and is marked as not having reached the target: nothing is
extrapolated.
"""

from __future__ import annotations

import logging
import math
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from coadapt.tools.measure.curve_records import RunRecord, StepModel
from coadapt.tools.measure.curves import (
    CORE_FACTORS,
    EXTRA_FACTORS,
    CurveRun,
    CurveRunner,
    curve_batch_sizes,
    curve_workers,
    reached_target,
    run_group_curve_runner,
    to_target,
    validation_table,
)
from coadapt.ui.progress import ProgressBar
from coadapt.world.jobtypes import DeclaredJobType

log = logging.getLogger(__name__)

# Cumulative deadlines: a tier may use what earlier tiers left. "finish" (core runs
# that were only probed, resumed to their target) reaches to 88% of the budget: the
# core sizes reaching their target matter more than extra seeds or batch sizes.
FULL_TIERS = (("m0", 0.25), ("core", 0.35), ("finish", 0.28), ("extend", 0.02),
              ("seeds", 0.07), ("extra", 0.02), ("extend-extra", 0.01))
QUICK_TIERS = (("m0", 0.5), ("core", 0.35), ("extend", 0.15))


class CurvePlanner:
    """Execute the tiers within ``budget_s`` seconds (see module docstring)."""

    def __init__(self, jobs: Sequence[DeclaredJobType], model: StepModel, budget_s: float, quick: bool,
                 seeds: int, workers_max: int, runner: CurveRunner = run_group_curve_runner,
                 workdir: str | Path | None = None) -> None:
        self.jobs = {j.name: j for j in jobs}
        self.model, self.budget, self.quick = model, budget_s, quick
        self.seeds, self.workers_max, self.runner = seeds, workers_max, runner
        self.records: list[RunRecord] = []
        self._workdir = workdir
        self._end = float("inf")

    def _tasks(self, tier: str) -> list[RunRecord]:
        recs = []
        for job in self.jobs.values():
            core = curve_batch_sizes(job, CORE_FACTORS)
            sizes = {"m0": core[:1], "core": core[1:], "seeds": core,
                     "extra": curve_batch_sizes(job, EXTRA_FACTORS)}[tier]
            seeds = range(1, self.seeds) if tier == "seeds" else [0]
            for seed in seeds:
                for m in sizes:
                    run = CurveRun(job.name, m, curve_workers(job, m, self.workers_max), seed)
                    recs.append(RunRecord(run, tier))
        cost = {n: self.model.step_time(j, 1, j.limits.init_batch_size) for n, j in self.jobs.items()}
        # M0 first (the phi spread over seeds is reported at M0), then cheapest first: by
        # expected seconds once predictable, else by step time
        return sorted(recs, key=lambda r: (r.run.seed,
                                           r.run.batch_size != self.jobs[r.run.type].limits.init_batch_size,
                                           self._need(r)[0] or 0.0, cost[r.run.type],
                                           r.run.batch_size))

    def execute(self, bar: ProgressBar | None = None) -> list[RunRecord]:
        tiers = QUICK_TIERS if self.quick else FULL_TIERS
        start = time.monotonic()
        self._end = start + self.budget
        with tempfile.TemporaryDirectory(prefix="coadapt-curves-") as tmp:
            self.dir = Path(self._workdir) if self._workdir else Path(tmp)
            self.dir.mkdir(parents=True, exist_ok=True)
            cum = 0.0
            for tier, frac in tiers:
                cum += frac
                deadline = start + self.budget * cum
                if tier.startswith("extend"):
                    self._extend(deadline, bar)
                    continue
                if tier == "finish":
                    self._finish(deadline, bar)
                    continue
                todo = self._tasks(tier)
                for i, rec in enumerate(todo):
                    self._run(rec, self._share(rec, todo[i + 1:], deadline), bar)
                    self.records.append(rec)
        counts = {s: sum(r.status == s for r in self.records)
                  for s in ("reached", "capped", "skipped", "failed")}
        log.info("runs to target: %s", ", ".join(f"{n} {s}" for s, n in counts.items()))
        return self.records

    # ------------------------------------------------------------------ prediction
    def _m0(self, name: str) -> RunRecord | None:
        job = self.jobs[name]
        return next((r for r in self.records if r.run.type == name and r.run.seed == 0
                     and r.run.batch_size == job.limits.init_batch_size and r.table is not None
                     and r.table.height), None)

    def _gains(self, rec: RunRecord) -> tuple[np.ndarray, np.ndarray] | None:
        """(progress, AdaScale gain r(S) at this batch) along the type's M0 curve."""
        m0 = self._m0(rec.run.type)
        if m0 is None:
            return None
        t = m0.table.drop_nulls(["grad_sqr", "grad_var"])
        if t.height == 0:
            return None
        sqr, var = t["grad_sqr"].to_numpy(), t["grad_var"].to_numpy()
        scale = rec.run.batch_size / self.jobs[rec.run.type].limits.init_batch_size
        gain = (var + sqr) / np.maximum(var / scale + sqr, 1e-12)
        return t["progress"].to_numpy(), np.clip(gain, 1.0, scale)

    def _steps_for(self, rec: RunRecord, progress: float) -> int:
        """Steps to make ``progress`` at this batch. AdaScale keeps progress to target
        about constant across batch sizes; a step adds r(S), which changes along
        training (phi grows), so integrate 1/r over the M0 curve's rows. Without an
        M0 curve, use S (the largest gain possible: a lower bound on steps)."""
        job = self.jobs[rec.run.type]
        curve = self._gains(rec)
        if curve is None:
            return math.ceil(progress * job.limits.init_batch_size / rec.run.batch_size)
        at, gain = curve
        edges = np.concatenate([[0.0], at])
        grid = np.minimum(edges, progress)
        # an interval uses the gain at its start (1 before the first row): gains grow
        # along training, so this errs towards more steps, and unused time is returned
        left = np.concatenate([[1.0], gain[:-1]])
        steps = float(np.sum(np.diff(grid) / left))
        steps += max(progress - edges[-1], 0.0) / gain[-1]  # beyond the M0 curve
        return math.ceil(steps)

    def _goal_steps(self, rec: RunRecord) -> tuple[int, int] | None:
        """Steps (expected, generous cap) to reach the target at this batch; None until
        the type's M0 curve has reached it."""
        job = self.jobs[rec.run.type]
        m0 = self._m0(rec.run.type)
        if m0 is None or m0.status != "reached":
            return None
        goal = to_target(m0.table, job.target, job.higher_is_better)["progress"]
        return self._steps_for(rec, 1.15 * goal), self._steps_for(rec, 1.6 * goal)

    def _need(self, rec: RunRecord, done: int = 0) -> tuple[float | None, float | None, float]:
        """Seconds (expected to reach the target, generous cap, one-row probe) for a run
        that has ``done`` steps already; the first two are None while unpredictable."""
        job, run = self.jobs[rec.run.type], rec.run
        price = partial(self.model.seconds, job, run.workers, run.batch_size)
        probe = price(self._steps_for(rec, job.eval_every))
        goal = self._goal_steps(rec)
        if goal is None:
            return None, None, probe
        return price(max(goal[0] - done, 1)), price(max(goal[1] - done, 1)), probe

    def _share(self, rec: RunRecord, others: Sequence[RunRecord], deadline: float) -> float:
        """Seconds this run may use: an equal share of the tier's time left while its
        need is unknown; its (generous) need if the expected need fits; else a probe."""
        remaining = deadline - time.monotonic()
        expect, cap, probe = self._need(rec)
        rec.predicted_s = expect
        if expect is None or cap is None:
            return remaining / (len(others) + 1)
        if expect <= remaining:
            return max(min(cap, remaining), probe)
        # only core sizes probe (their phi and metric matter most); a probe must fit in
        # the whole budget
        if rec.tier != "core" or time.monotonic() + probe > self._end:
            return 0.0
        log.info("%s: needs ~%.0fs, more than this tier has left (%.0fs); probing only",
                 rec.run.label(), expect, max(remaining, 0.0))
        return probe

    def _finish(self, deadline: float, bar: ProgressBar | None) -> None:
        """Resume capped seed-0 core runs from their checkpoints, cheapest first, while
        the expected remaining time fits: a probe then costs nothing extra."""
        todo = []
        for rec in self.records:
            if (rec.status == "capped" and rec.run.seed == 0 and rec.tier in ("m0", "core")
                    and rec.table is not None and rec.table.height):
                expect, cap, _ = self._need(rec, done=int(rec.table["iteration"].max()))
                if expect is not None and cap is not None:
                    todo.append((expect, cap, rec))
        for expect, cap, rec in sorted(todo, key=lambda x: x[0]):
            job, run = self.jobs[rec.run.type], rec.run
            remaining = deadline - time.monotonic()
            if expect > remaining:
                log.info("%s: resuming needs ~%.0fs, %.0fs left; stays capped", run.label(),
                         expect, max(remaining, 0.0))
                continue
            seconds = min(cap, remaining)
            steps = self.model.max_steps(job, run.workers, run.batch_size, seconds)
            if bar is not None:
                bar.note(f"resume {run.label()} (<= {steps} steps)")
            self._continue(rec, steps, None, "resuming", seconds)

    # ------------------------------------------------------------------ running
    def _continue(self, rec: RunRecord, steps: int, target: float | None, what: str,
                  seconds: float) -> bool:
        """Resume a run from its checkpoint for ``steps`` more steps (and at most
        ``seconds``); on failure keep the curve measured so far. True if it ran."""
        run = rec.run
        t0 = time.monotonic()
        try:
            events = self.runner(run, steps, self._base(run), True, target,
                                 self._wall_limit(seconds))
        except (RuntimeError, ValueError, OSError) as exc:
            log.error("%s %s failed: %s", what, run.label(), exc)
            return False
        self._account(rec, events, time.monotonic() - t0, steps)
        return True

    def _base(self, run: CurveRun) -> Path:
        return self.dir / f"{run.type}-M{run.batch_size}-s{run.seed}"

    def _wall_limit(self, seconds: float, forced: bool = False) -> float:
        """A launch's wall-clock limit: its share, within what is left of the budget
        (a forced run keeps its share, with room for a mispriced first validation)."""
        if forced:
            return max(1.5 * seconds, 1.0)
        return max(min(seconds, self._end - time.monotonic()), 1.0)

    def _run(self, rec: RunRecord, share: float, bar: ProgressBar | None) -> None:
        job, run = self.jobs[rec.run.type], rec.run
        min_steps = self._steps_for(rec, job.eval_every)  # a useful curve has a validation row
        forced = rec.tier == "m0"  # never skip M0: without it no profile loads
        if forced:
            share = max(share, self._need(rec)[2])
        limit = self._wall_limit(share, forced)
        steps = self.model.max_steps(job, run.workers, run.batch_size, min(share, limit))
        if forced:
            steps = max(steps, min_steps)
        if steps < min_steps:
            rec.status = "skipped"
            log.info("%s: skipped, its share of the time budget (%.0fs) is too small",
                     run.label(), max(share, 0.0))
            return
        if bar is not None:
            bar.note(f"{run.label()} (<= {steps} steps)")
        t0 = time.monotonic()
        try:
            events = self.runner(run, steps, self._base(run), False, None, limit)
        except (RuntimeError, ValueError, OSError) as exc:  # one bad run, not the profile
            rec.status = "failed"
            rec.wall_s = time.monotonic() - t0
            log.error("%s failed: %s", run.label(), exc)
        else:
            self._account(rec, events, time.monotonic() - t0, steps)
        if bar is not None:
            bar.advance(1.0)

    def _account(self, rec: RunRecord, events: list[dict[str, Any]], wall: float,
                 steps: int) -> None:
        job = self.jobs[rec.run.type]
        rec.table = validation_table(events)
        rec.wall_s += wall
        rec.launches += 1
        rec.max_steps = steps if rec.max_steps is None else rec.max_steps + steps
        reached = bool(reached_target(rec.table, job.target, job.higher_is_better).any())
        rec.status = "reached" if reached else "capped"
        stepped = sum(e["step_time"] for e in events if e.get("kind") == "observation")
        if stepped > 0 and rec.launches == 1:
            ratio = (wall - self.model.startup.get(job.name, 6.0)) / stepped
            old = self.model.overhead.get(job.name)
            ratio = min(max(ratio, 1.0), 3.0)
            self.model.overhead[job.name] = ratio if old is None else 0.5 * (old + ratio)
        log.info("%s: %s after %d steps, %d validation rows, %.0fs", rec.run.label(),
                 rec.status, sum(1 for e in events if e.get("kind") == "observation"),
                 rec.table.height, wall)

    def _extend(self, deadline: float, bar: ProgressBar | None) -> None:
        """Continue finished seed-0 curves (past their target) to the longest one's rows."""
        todo = []
        for name in self.jobs:
            mine = [r for r in self.records if r.run.type == name and r.run.seed == 0
                    and r.table is not None and r.table.height]
            rows = max((r.table.height for r in mine), default=0)
            # validation fires when progress crosses a multiple of eval_every: aim a third
            # of an interval past the last crossing, so an estimated gain lands inside it
            goal = (rows + 1 / 3) * float(self.jobs[name].eval_every)
            todo += [(r, goal) for r in mine if r.status == "reached" and r.table.height < rows]
        for i, (rec, goal) in enumerate(todo):
            job, run = self.jobs[rec.run.type], rec.run
            share = (deadline - time.monotonic()) / (len(todo) - i)
            prog, its = rec.table["progress"].to_numpy(), rec.table["iteration"].to_numpy()
            tail = slice(-2, None) if len(prog) > 1 else slice(None)
            gain = max(float(np.ptp(prog[tail]) / max(np.ptp(its[tail]), 1)), 1.0)
            need = math.ceil((goal - prog[-1]) / gain)  # recent progress per step
            steps = min(need, self.model.max_steps(job, run.workers, run.batch_size, share))
            if steps < need:
                log.warning("%s: extension to %d rows skipped (budget)", run.label(),
                            rec.table.height)
                continue
            if bar is not None:
                bar.note(f"extend {run.label()} (+{steps} steps)")
            never = 1e9 if job.higher_is_better else -1e9
            if self._continue(rec, steps, never, "extending", share):
                rec.status = "reached"
