"""A run's world, built once and handed down.

Everything a run's jobs live in: the cluster (nodes, kinds, network), the job
types' declared limits, the profiles as measured and as the jobs follow them
(refined by the machine calibration, when there is one), the calibration's
costs, the efficiency truth, and the simulator's truth per job type. The
commands build one :class:`World` per run (an experiment: per cell) and pass
it to the workload generator, the settings, the modeled backend and the
fairness yardstick; nothing else rebuilds limits, refined profiles or truths.

Policies never receive a World: they see the engine's snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from coadapt.models.batching import JobLimits, split_batch, step_with_accum
from coadapt.world.cluster import ClusterSpec, packed_placement
from coadapt.world.costs import LiveCosts, refine_profiles
from coadapt.world.limits import declared_limits
from coadapt.world.profiles.profile import AppProfile
from coadapt.world.truth import ClusterTruth, efficiency_correction, true_gain

EFFICIENCY_TRUTHS = ("curves", "formula")



@dataclass(frozen=True, eq=False)
class World:
    """The facts of one run (see the module docstring); immutable once built."""

    cluster: ClusterSpec
    measured: Mapping[str, AppProfile]  # the profiles as read (what the files say)
    profiles: Mapping[str, AppProfile]  # what the jobs follow: refined by ``costs`` if given
    limits: Mapping[str, JobLimits]
    truths: Mapping[str, ClusterTruth]
    costs: LiveCosts | None = None
    efficiency_truth: str = "curves"
    _jct: dict = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, profiles: Mapping[str, AppProfile], cluster: ClusterSpec, *,
              costs: LiveCosts | None = None, efficiency_truth: str = "curves",
              apps: Iterable[str] = ()) -> World:
        """The world of a run on ``cluster``: every profiled job type plus ``apps``
        (job types a live run declares without a profile). KeyError names a job
        type nobody declares; ValueError an unknown efficiency truth."""
        if efficiency_truth not in EFFICIENCY_TRUTHS:
            raise ValueError(f"--efficiency-truth {efficiency_truth!r}: expected one of "
                             f"{', '.join(EFFICIENCY_TRUTHS)}")
        types = set(profiles) | set(apps)
        limits = declared_limits(types, profiles)
        followed = refine_profiles(profiles, costs) if costs is not None else profiles
        truths = {a: ClusterTruth.of(a, p, cluster.network) for a, p in followed.items()}
        return cls(cluster, profiles, followed, limits, truths, costs, efficiency_truth)

    def truth(self, app: str) -> ClusterTruth:
        """The simulator's truth of job type ``app`` on this cluster."""
        return self.truths[app]

    def efficiency(self, app: str):
        """The measured correction of the gain formula for ``app`` under this
        world's efficiency truth (None: the formula is the truth)."""
        return efficiency_correction(self.profiles[app], self.efficiency_truth)

    # ------------------------------------------------- seconds to train
    def train_seconds(self, app: str, replicas: int, batches: np.ndarray, *,
                      steps: str = "truth") -> tuple[np.ndarray, np.ndarray]:
        """The one answer to "seconds of training to the target at ``replicas``
        packed workers, per constant batch", at the truth's step time (no
        restarts, waits or pauses), and the batch actually run (micro-batch x
        replicas x accumulation steps); inf where a batch cannot run.

        ``steps`` says where the steps to target come from:

        - ``"truth"``: what a simulated job takes: progress per step is the
          true gain (the formula corrected by the measured curves under
          ``--efficiency-truth curves``), integrated over the profile's epochs.
          The fairness yardstick's T_iso is built on it.
        - ``"measured"``: the optimizer steps the profile's validation tables
          recorded at the requested batch: what a practitioner who ran the job
          before would estimate, and how the Pollux study's generator priced
          configurations (with it ``workloads.generate`` reproduces the
          published workloads). Requests are tuned and Tiresias's threshold
          is priced with it. Under the default truth the two agree exactly on
          most configurations of the shipped CPU profiles (the worst: mlp 0.89x,
          cnn 0.97x); under ``--efficiency-truth formula`` the truth's steps are
          up to 18% fewer (lstm, transformer at large batches).
        """
        if steps not in ("truth", "measured"):
            raise ValueError(f"steps={steps!r}: expected 'truth' or 'measured'")
        prof, lim = self.profiles[app], self.limits[app]
        k, m0 = replicas, lim.init_batch_size
        placement = packed_placement(k, self.cluster.max_slots_per_node)
        micro, accum = split_batch(batches, k, lim)
        truth = self.truths[app]
        out = np.full(len(batches), np.inf)
        run = (micro * k * (accum + 1)).astype(int)
        if steps == "truth":
            sqr, var = prof.grad_stats_grid(batches.astype(float))
            measured = self.efficiency(app)
            dp = np.diff(prof.epoch_progress)
        for i in range(len(batches)):
            if steps == "measured":
                step, sync = truth.throughput(placement, int(micro[i]))
                b = batches[i]
                out[i] = float(prof.iterations(b, prof.completion_epoch(b))
                               * step_with_accum(step, sync, int(accum[i])))
                continue
            if run[i] < m0 or micro[i] < lim.min_local_bsz:
                continue
            step, sync = truth.throughput(placement, float(micro[i]))
            total = step_with_accum(step, sync, int(accum[i]))
            b = float(run[i])
            ce = prof.completion_epoch(b)
            g = true_gain(sqr[: ce + 1, i], var[: ce + 1, i], b, m0, measured)
            out[i] = float(np.sum(dp[: ce + 1] / g)) * total
        return out, run

    def estimated_jct(self, app: str, replicas: int, batch: int) -> float:
        """A practitioner's estimate of the seconds to train at (replicas, batch):
        :meth:`train_seconds` with the measured steps, cached per configuration."""
        key = (app, replicas, batch)
        hit = self._jct.get(key)
        if hit is None:
            hit = self._jct[key] = float(
                self.train_seconds(app, replicas, np.array([batch]), steps="measured")[0][0])
        return hit
