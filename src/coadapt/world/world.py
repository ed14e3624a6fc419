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

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from coadapt.models.batching import JobLimits, split_batch, step_with_accum
from coadapt.world.cluster import ClusterSpec, packed_placement
from coadapt.world.costs import LiveCosts, refine_profiles
from coadapt.world.kinds import KindError, KindSpeeds
from coadapt.world.limits import declared_limits
from coadapt.world.names import EFFICIENCY_TRUTHS  # noqa: F401 (re-exported)
from coadapt.world.profiles.profile import AppProfile
from coadapt.world.study import Study
from coadapt.world.truth import ClusterTruth, ScaledTruth, StepTruth, efficiency_correction, true_gain

PLAIN_KINDS = ("default", "native")  # plain workers: the profiles as followed
BOOTSTRAP_STREAM = 3  # the seed's stream for --bootstrap-error (workloads use 1 and 2)


def check_bootstrap_error(error: float) -> float:
    """``--bootstrap-error``: a finite number >= 0; ValueError otherwise."""
    if not (error >= 0 and math.isfinite(error)):
        raise ValueError(f"--bootstrap-error {error}: expected a finite number >= 0")
    return error


def kind_truth(app: str, profile: AppProfile, base: ClusterTruth, kind: str, cluster: ClusterSpec,
               speeds: KindSpeeds | None) -> StepTruth:
    """The truth of ``app`` on nodes of ``kind``: the kind's own measured tables
    (GPU profiles), else the followed profile scaled by the kind's measured
    factors over plain workers (CPU kinds), else, for a plain kind, the profile."""
    if kind in profile.by_kind:
        return ClusterTruth.of(app, profile.by_kind[kind], cluster.network)
    if speeds is not None and app in speeds.factors and kind in speeds.factors[app]:
        compute, sync = speeds.relative(app, kind)
        return base if (compute, sync) == (1.0, 1.0) else ScaledTruth(base, compute, sync)
    if kind in PLAIN_KINDS:
        return base
    where = ("its profile has no tables of that kind (GPU types: "
             f"{', '.join(profile.by_kind) or 'none'})" if profile.by_kind else
             "no measured speed: run 'coadapt calibrate --quick --cluster ...' with this kind, "
             "or pass --kind-speeds FILE")
    raise KindError(f"--cluster {cluster}: kind {kind!r} for job type {app!r}: {where}")



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
    kind_truths: Mapping[tuple[str, str], StepTruth] = field(default_factory=dict)
    kind_speeds: KindSpeeds | None = None
    study: Study | None = None  # a published study's per-type constants (``world.study``)
    _jct: dict = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, profiles: Mapping[str, AppProfile], cluster: ClusterSpec, *,
              costs: LiveCosts | None = None, efficiency_truth: str = "curves",
              apps: Iterable[str] = (), kind_speeds: KindSpeeds | None = None,
              study: Study | None = None) -> World:
        """The world of a run on ``cluster``: every profiled job type plus ``apps``
        (job types a live run declares without a profile). KeyError names a job
        type nobody declares; ValueError an unknown efficiency truth; KindError
        a kind of node no profile or measurement covers."""
        if efficiency_truth not in EFFICIENCY_TRUTHS:
            raise ValueError(f"--efficiency-truth {efficiency_truth!r}: expected one of "
                             f"{', '.join(EFFICIENCY_TRUTHS)}")
        if study is not None:
            profiles = study.calibrate(profiles)
        types = set(profiles) | set(apps)
        limits = declared_limits(types, profiles)
        followed = refine_profiles(profiles, costs) if costs is not None else profiles
        truths = {a: ClusterTruth.of(a, p, cluster.network) for a, p in followed.items()}
        kinds = {(a, k): kind_truth(a, followed[a], truths[a], k, cluster, kind_speeds)
                 for a in followed for k in cluster.kinds}
        return cls(cluster, profiles, followed, limits, truths, costs, efficiency_truth,
                   kinds, kind_speeds, study)

    def with_costs(self, costs: LiveCosts | None) -> World:
        """This world under another machine calibration (the live judge
        re-simulates at a run's measured speed): the same cluster, kinds,
        job types and efficiency truth. ``measured`` is already the study's
        calibration, so the study is carried over, not applied again."""
        w = World.build(self.measured, self.cluster, costs=costs, apps=self.limits,
                        efficiency_truth=self.efficiency_truth, kind_speeds=self.kind_speeds)
        return replace(w, study=self.study, _jct={})

    def truth(self, app: str, kind: str | None = None) -> StepTruth:
        """The simulator's truth of job type ``app`` on nodes of ``kind`` (None:
        on plain nodes, the profile as followed)."""
        return self.truths[app] if kind is None else self.kind_truths[(app, kind)]

    @property
    def heterogeneous(self) -> bool:
        return len(self.cluster.kinds) > 1

    def kind_speed(self, error: float = 0.0, seed: int = 0) -> dict[str, dict[str, float]]:
        """Sia's bootstrap, what a kind-aware policy may know of the truth: per
        job type and kind, one worker's samples/s at the initial batch (as an
        operator profiles each type once per kind). Empty on one kind.

        ``error`` > 0 is a sensitivity (``--bootstrap-error``): each entry is
        multiplied by exp(error * z), z ~ N(0, 1) drawn per (type, kind) in
        sorted order from ``seed``'s own stream, as a profile taken on another
        day or machine would be off; the truth itself stays exact."""
        if not self.heterogeneous:
            return {}
        check_bootstrap_error(error)
        out: dict[str, dict[str, float]] = {}
        for app in self.profiles:
            lim = self.limits[app]
            micro, accum = split_batch(np.array([lim.init_batch_size]), 1, lim)
            for kind in self.cluster.kinds:
                step, sync = self.truth(app, kind).throughput((1,), float(micro[0]))
                total = float(step_with_accum(step, sync, int(accum[0])))
                out.setdefault(app, {})[kind] = float(micro[0]) * (int(accum[0]) + 1) / total
        if error > 0:
            rng = np.random.default_rng((seed, BOOTSTRAP_STREAM))
            for app in sorted(out):
                for kind in sorted(out[app]):
                    out[app][kind] *= float(np.exp(error * rng.standard_normal()))
        return out

    def efficiency(self, app: str):
        """The measured correction of the gain formula for ``app`` under this
        world's efficiency truth (None: the formula is the truth)."""
        return efficiency_correction(self.profiles[app], self.efficiency_truth)

    # ------------------------------------------------- seconds to train
    def train_seconds(self, app: str, replicas: int, batches: np.ndarray, *,
                      steps: str = "truth", kind: str | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
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
        per_node = self.cluster.max_slots_per_node if kind is None else \
            max(n.slots for n in self.cluster.of_kind(kind))
        placement = packed_placement(k, per_node)
        micro, accum = split_batch(batches, k, lim)
        truth = self.truth(app, kind)
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
