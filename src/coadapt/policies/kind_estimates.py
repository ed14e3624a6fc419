"""What a scheduler can estimate about a job on each kind of node.

A kind-aware policy may know two things (issue 24, item 3): the goodput
models fitted from the job's own observations on the kinds it ran on
(``JobView.models``), and Sia's bootstrap, one worker's samples/s per job type
and kind at the type's initial batch (``Snapshot.kind_speed``), profiled once
by an operator. Nothing else of the truth. From these, per kind:

- a kind the job ran on: its own model there, as fitted;
- a kind it never ran on: its model on a kind it ran on (the current one
  first), with throughput scaled by ``kind_speed[app][k] / kind_speed[app][seen]``
  (Sia's projection, ``--project_throughputs`` in the Sia artifact). Statistical
  efficiency does not depend on the kind, so goodput scales by the same ratio
  and the best batch is the one of the seen kind;
- a job with no model yet (it never reported a step): the bootstrap alone,
  ``kind_speed[app][k] * R`` samples/s at the initial batch with efficiency 1
  (linear scaling is all one worker's profile can say). Sia's artifact, by
  default, knows nothing of an unstarted job and offers it one GPU of every
  type at an equal value; we use the bootstrap it profiles anyway, so a new
  job already prefers the kind that is faster for its type. Where the
  bootstrap is absent (a one-kind cluster: ``kind_speed`` is empty) every kind
  counts as equally fast: ``R`` in relative units, as
  ``estimates.fixed_batch_throughput`` does.

A model whose kind is unknown (``JobView.models`` empty, ``model`` set: a
kind-unaware engine) is taken as valid on every kind, unscaled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from coadapt.models.batching import split_batch
from coadapt.models.goodput import BatchChoice, GoodputModel
from coadapt.policies.base import JobView, Snapshot


@dataclass(frozen=True)
class OnKind:
    """How a job is estimated on one kind: the fitted model used (None: the
    bootstrap alone), the factor on its throughput, and the bootstrap speed
    (one worker's samples/s at M0 on the kind; None when not profiled)."""

    kind: str
    model: GoodputModel | None
    ratio: float
    speed: float | None

    @property
    def projected(self) -> bool:
        """True when the estimate borrows another kind's model."""
        return self.model is not None and self.ratio != 1.0


def job_speeds(snap: Snapshot, job: JobView) -> Mapping[str, float]:
    """The bootstrap for the job's type: kind -> one worker's samples/s."""
    return snap.kind_speed.get(job.application, {})


def _seen_models(job: JobView) -> dict[str | None, GoodputModel]:
    """The job's own models per kind, the current kind first; a lone model of
    unknown kind under the key None."""
    models: dict[str | None, GoodputModel] = {}
    if job.kind is not None and job.kind in job.models:
        models[job.kind] = job.models[job.kind]
    models.update(job.models)
    if not models and job.model is not None:
        models[job.kind] = job.model
    return models


def on_kind(job: JobView, kind: str, speeds: Mapping[str, float]) -> OnKind:
    """The estimate of ``job`` on ``kind`` (see the module docstring)."""
    speed = speeds.get(kind)
    models = _seen_models(job)
    if kind in models:
        return OnKind(kind, models[kind], 1.0, speed)
    for seen, model in models.items():
        base = speeds.get(seen) if seen is not None else None
        if speed is not None and base:
            return OnKind(kind, model, speed / base, speed)
    if models:  # no bootstrap to project with: the kinds count as equal
        return OnKind(kind, next(iter(models.values())), 1.0, speed)
    return OnKind(kind, None, 1.0, speed)


def goodput_on(job: JobView, est: OnKind, nodes: np.ndarray,
               replicas: np.ndarray) -> BatchChoice:
    """Best goodput (samples/s at efficiency) and its (micro, accum) per
    allocation shape on ``est.kind``."""
    nodes = np.atleast_1d(np.asarray(nodes, dtype=float))
    replicas = np.atleast_1d(np.asarray(replicas, dtype=float))
    if est.model is None:
        micro, accum = split_batch(job.limits.start_batch(replicas), replicas, job.limits)
        rate = est.speed if est.speed is not None else 1.0
        return BatchChoice(rate * replicas, micro, accum)
    best = est.model.optimize(nodes, replicas, job.limits)
    return BatchChoice(best.goodput * est.ratio, best.micro, best.accum)


def goodput_on_kinds(job: JobView, ests: list[OnKind], nodes: list[np.ndarray],
                     replicas: list[np.ndarray]) -> list[np.ndarray]:
    """``goodput_on(...).goodput`` for several kinds at once: one batch search
    per distinct model (the kinds projected from one model share it), which
    is what keeps a round of Sia fast at thousands of jobs."""
    out: list[np.ndarray | None] = [None] * len(ests)
    groups: dict[int, list[int]] = {}
    for i, est in enumerate(ests):
        if est.model is None:
            out[i] = goodput_on(job, est, nodes[i], replicas[i]).goodput
        else:
            groups.setdefault(id(est.model), []).append(i)
    for members in groups.values():
        model = ests[members[0]].model
        assert model is not None
        best = model.optimize(np.concatenate([nodes[i] for i in members]).astype(float),
                              np.concatenate([replicas[i] for i in members]).astype(float),
                              job.limits).goodput
        cuts = np.cumsum([len(replicas[i]) for i in members])[:-1]
        for i, part in zip(members, np.split(best, cuts), strict=True):
            out[i] = part * ests[i].ratio
    return [np.asarray(o, dtype=float) for o in out]


def throughput_on(job: JobView, est: OnKind, nodes: np.ndarray, replicas: np.ndarray,
                  batch: int) -> np.ndarray:
    """Samples/s at total batch ``batch`` per allocation shape on ``est.kind``
    (no efficiency: what a fixed-batch scheduler such as Gavel counts)."""
    nodes = np.atleast_1d(np.asarray(nodes, dtype=float))
    replicas = np.atleast_1d(np.asarray(replicas, dtype=float))
    if est.model is None:
        rate = est.speed if est.speed is not None else 1.0
        return rate * replicas
    micro, accum = split_batch(batch, replicas, job.limits)
    return est.model.throughput(nodes, replicas, micro, accum) * est.ratio


def best_batch_on(job: JobView, est: OnKind, nodes: int, replicas: int) -> int:
    """The goodput-optimal total batch at one allocation on ``est.kind``."""
    choice = goodput_on(job, est, np.array([nodes]), np.array([replicas]))
    return int(choice.batch_size[0]) * replicas
