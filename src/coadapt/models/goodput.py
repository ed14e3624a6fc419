"""Pollux goodput model (Qiao et al., OSDI 2021, section 3), vectorized numpy.

Throughput comes from a 7-parameter model of one optimizer step, statistical
efficiency from the gradient noise scale; goodput is their product. Everything
takes arrays so that a policy can evaluate a whole speedup table in one call.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import scipy.optimize

from coadapt.models.batching import JobLimits, LimitArrays, split_batch

_TINY = 1e-8


@dataclass(frozen=True)
class PerfParams:
    """T_acc = alpha_c + beta_c*m; T_net = alpha + beta*max(R-2, 0) for the
    bottleneck link (``_n`` inter-node, ``_r`` intra-node); gamma blends
    compute and network time: T = (T_acc^g + T_net^g)^(1/g)."""

    alpha_c: float
    beta_c: float
    alpha_n: float
    beta_n: float
    alpha_r: float
    beta_r: float
    gamma: float

    def to_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: dict[str, float]) -> PerfParams:
        return cls(**{k: float(d[k]) for k in cls.__dataclass_fields__})

    def as_array(self) -> np.ndarray:
        return np.array(
            [self.alpha_c, self.beta_c, self.alpha_n, self.beta_n, self.alpha_r,
             self.beta_r, self.gamma]
        )


@dataclass(frozen=True)
class GradParams:
    """Gradient statistics: grad_sqr ~ |g|^2, grad_var ~ tr(Sigma)/M0."""

    sqr: float
    var: float

    @property
    def noise_scale(self) -> float:
        """PGNS divided by M0 (multiply by M0 for the noise scale phi)."""
        return self.var / self.sqr if self.sqr > 0 else math.inf


def gain(grad_sqr: float | np.ndarray, grad_var: float | np.ndarray,
         scale: float | np.ndarray) -> np.ndarray:
    """AdaScale gain r(S) = (var + sqr) / (var/S + sqr): progress made by one
    step at batch S*M0, in iterations at M0."""
    denom = np.asarray(grad_var / scale + grad_sqr, dtype=float)
    num = np.asarray(grad_var + grad_sqr, dtype=float)
    positive = denom > 0
    if positive.all():  # the usual case: no guard needed
        return num / denom
    return np.where(positive, num / np.where(positive, denom, 1.0), 1.0)


def efficiency(grad_sqr: float | np.ndarray, grad_var: float | np.ndarray,
               scale: float | np.ndarray) -> np.ndarray:
    """Statistical efficiency E = r(S)/S = (phi + M0)/(phi + M)."""
    return gain(grad_sqr, grad_var, scale) / scale


def network_time(p: np.ndarray, nodes: np.ndarray, replicas: np.ndarray) -> np.ndarray:
    """Bottleneck-link all-reduce time; ~0 for a single replica."""
    inter = nodes > 1
    intra = ~inter & (replicas > 1)
    alpha = np.where(inter, p[2], np.where(intra, p[4], _TINY))
    beta = np.where(inter, p[3], np.where(intra, p[5], _TINY))
    return alpha + beta * np.maximum(replicas - 2, _TINY)


def step_time(p: np.ndarray, nodes: np.ndarray, replicas: np.ndarray,
              micro: np.ndarray, accum: np.ndarray) -> np.ndarray:
    """Predicted seconds per optimizer step: s*T_acc + (T_acc^g + T_net^g)^(1/g)."""
    t_acc = p[0] + p[1] * micro
    t_net = network_time(p, nodes, replicas)
    g = p[6]
    log_sync = np.logaddexp(g * np.log(t_acc), g * np.log(t_net)) / g
    return accum * t_acc + np.exp(log_sync)


def _objective(x: np.ndarray, nodes: np.ndarray, replicas: np.ndarray, m: np.ndarray,
               log_acc: np.ndarray, log_opt: np.ndarray) -> tuple[float, np.ndarray]:
    """RMSLE of accumulation and optimizer-step time plus the Pollux priors,
    with its analytic gradient (fits run thousands of times per replay)."""
    ac, bc, an, bn, ar, br, g = x
    n = len(m)
    inter = nodes > 1
    intra = ~inter & (replicas > 1)
    rr = np.maximum(replicas - 2, _TINY)
    acc = ac + bc * m
    net = np.where(inter, an + bn * rr, np.where(intra, ar + br * rr, _TINY + _TINY * rr))
    la, ln = np.log(acc), np.log(net)
    log_z = np.logaddexp(g * la, g * ln)
    pred = log_z / g
    wa, wn = np.exp(g * la - log_z), np.exp(g * ln - log_z)
    r1, r2 = la - log_acc, pred - log_opt
    e1 = math.sqrt(float(r1 @ r1) / n + 1e-18)
    e2 = math.sqrt(float(r2 @ r2) / n + 1e-18)
    value = e1 + e2 + 1e-3 * (g - 1) ** 2 + 1e-2 * ((bn / an) ** 2 + (br / ar) ** 2)
    c2 = r2 / (n * e2)                # d e2 / d pred
    d_acc = r1 / (n * e1 * acc) + c2 * wa / acc  # total derivative w.r.t. acc
    d_net = c2 * wn / net
    d_inter, d_intra = d_net * inter, d_net * intra
    grad = np.array([
        d_acc.sum(),
        d_acc @ m,
        d_inter.sum() - 2e-2 * bn**2 / an**3,
        d_inter @ rr + 2e-2 * bn / an**2,
        d_intra.sum() - 2e-2 * br**2 / ar**3,
        d_intra @ rr + 2e-2 * br / ar**2,
        c2 @ (-log_z / g**2 + (wa * la + wn * ln) / g) + 2e-3 * (g - 1),
    ])
    return value, grad


def fit_perf_params(num_nodes: np.ndarray, num_replicas: np.ndarray, micro: np.ndarray,
                    step_time_obs: np.ndarray, sync_time_obs: np.ndarray,
                    init: PerfParams | None = None) -> PerfParams:
    """Fit PerfParams to observed steps (one row per configuration); the same
    observations from the same start give the same fit, so a fit is computed
    once per distinct input (in a simulation, jobs of one type that visit the
    same configurations observe the same steps: thousands of fits repeat)."""
    rows = np.column_stack([np.asarray(a, dtype=float) for a in
                            (num_nodes, num_replicas, micro, step_time_obs, sync_time_obs)])
    start = None if init is None else tuple(init.as_array().tolist())
    return _fit_cached(rows.tobytes(), rows.shape[0], start)


@functools.lru_cache(maxsize=8192)
def _fit_cached(rows: bytes, n: int, init: tuple[float, ...] | None) -> PerfParams:
    table = np.frombuffer(rows, dtype=float).reshape(n, 5)
    return _fit(*table.T, init=None if init is None else PerfParams(*init))


def _fit(num_nodes: np.ndarray, num_replicas: np.ndarray, micro: np.ndarray,
         step_time_obs: np.ndarray, sync_time_obs: np.ndarray,
         init: PerfParams | None = None) -> PerfParams:
    """Fit PerfParams to observed steps (one row per configuration).

    ``step_time_obs`` is the time of a synchronizing step, ``sync_time_obs`` the
    part of it spent in all-reduce; compute time is their difference. Priors
    (as in Pollux) keep unobserved parts of the model optimistic: parameters
    with no data to inform them are pinned near zero, and inter-node network is
    assumed at least 10% slower than intra-node until measured.
    """
    nodes = np.asarray(num_nodes, dtype=float)
    replicas = np.asarray(num_replicas, dtype=float)
    m = np.asarray(micro, dtype=float)
    step = np.asarray(step_time_obs, dtype=float)
    acc = np.maximum(step - np.asarray(sync_time_obs, dtype=float), _TINY)
    x0 = init.as_array() if init is not None else np.array([0.1, 0.01] * 3 + [1.001])
    lower = np.array([_TINY] * 6 + [1.0])
    upper = np.array([np.inf] * 6 + [10.0])
    fixed = np.zeros(7, dtype=bool)
    if len(np.unique(m)) == 1:
        x0[0] = lower[0] = upper[0] = float(np.mean(acc)) / 2
        fixed[0] = True
    if not np.any(nodes > 1):
        fixed[[2, 3]] = True
    if not np.any((nodes == 1) & (replicas > 1)):
        fixed[[4, 5]] = True
    if not np.any(replicas > 2):
        fixed[[3, 5]] = True
    for i in np.flatnonzero(fixed):
        if i != 0:
            x0[i] = lower[i] = upper[i] = _TINY
    x0 = np.clip(x0, lower, upper)
    free = ~fixed
    args = (nodes, replicas, m, np.log(acc), np.log(step))

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        x = x0.copy()
        x[free] = z
        v, g = _objective(x, *args)
        return v, g[free]

    res = scipy.optimize.minimize(
        fun, x0[free], jac=True, method="L-BFGS-B",
        bounds=list(zip(lower[free], upper[free], strict=True)),
        options={"maxiter": 300},
    )
    x = x0.copy()
    x[free] = res.x
    if not np.any(nodes > 1):
        x[2] = max(x[2], x[4] * 1.1)
        x[3] = max(x[3], x[5] * 1.1)
    return PerfParams(*map(float, x))


def predicts_well(perf: PerfParams, nodes: int, replicas: int, micro: float,
                  step_time_obs: float, sync_time_obs: float, tol: float = 0.02) -> bool:
    """True when the model already predicts this observation (step and
    compute time) within ``tol``: refitting would change little."""
    p = perf.as_array()
    n, r, m = (np.array([float(v)]) for v in (nodes, replicas, micro))
    pred_step = float(step_time(p, n, r, m, np.zeros(1))[0])
    pred_acc = p[0] + p[1] * micro
    acc = max(step_time_obs - sync_time_obs, _TINY)
    return abs(pred_step / step_time_obs - 1) < tol and abs(pred_acc / acc - 1) < tol


@dataclass(frozen=True)
class BatchChoice:
    """Best configuration per allocation: goodput, micro-batch, accumulation."""

    goodput: np.ndarray
    micro: np.ndarray
    accum: np.ndarray

    @property
    def batch_size(self) -> np.ndarray:
        return self.micro * (self.accum + 1)


@dataclass(frozen=True)
class GoodputModel:
    """GOODPUT(a, M) = THROUGHPUT(a, M) * EFFICIENCY(M) for one job."""

    perf: PerfParams
    grad: GradParams
    init_batch_size: int

    def throughput(self, nodes, replicas, micro, accum) -> np.ndarray:
        p = self.perf.as_array()
        batch = replicas * micro * (accum + 1)
        return batch / step_time(p, nodes, replicas, micro, accum)

    def efficiency(self, batch_size) -> np.ndarray:
        return efficiency(self.grad.sqr, self.grad.var, batch_size / self.init_batch_size)

    def goodput(self, nodes, replicas, micro, accum) -> np.ndarray:
        batch = replicas * micro * (accum + 1)
        return self.throughput(nodes, replicas, micro, accum) * self.efficiency(batch)

    def optimize(self, nodes, replicas, limits: JobLimits,
                 num_candidates: int = 50) -> BatchChoice:
        """Best batch size per (nodes, replicas): see :func:`best_batches`. A
        job asks this for its own allocation at every epoch boundary; for a
        few allocations the candidates and their throughput are memoized (they
        change only with the throughput model), the efficiency is not."""
        nodes, replicas = _allocations(nodes, replicas)
        if nodes.size > _MEMO_SIZE:
            return best_batches(self.perf.as_array(), self.grad.sqr, self.grad.var,
                                self.init_batch_size, limits, nodes, replicas, num_candidates)
        key = (limits, nodes.tobytes(), replicas.tobytes(), num_candidates)
        grid = _memo_grid(*key)
        return _pick(grid, _memo_throughput(self.perf, *key), self.grad.sqr, self.grad.var,
                     self.init_batch_size)


@dataclass(frozen=True)
class BatchGrid:
    """Candidate batches (rows) per allocation (columns) as ``split_batch`` runs
    them, and which are legal: what an optimum needs besides the model."""

    nodes: np.ndarray
    replicas: np.ndarray
    micro: np.ndarray
    accum: np.ndarray
    total: np.ndarray
    valid: np.ndarray

    def columns(self, idx: np.ndarray) -> BatchGrid:
        """The allocations ``idx`` (columns) of this grid, in that order."""
        return BatchGrid(self.nodes[idx], self.replicas[idx], self.micro[:, idx],
                         self.accum[:, idx], self.total[:, idx], self.valid[:, idx])


def grid_throughput(p: np.ndarray, g: BatchGrid) -> np.ndarray:
    """Samples per second of every candidate of ``g`` under perf params ``p``
    ((7,) or (7, allocations))."""
    return _throughput(p, g)


def pick_batches(g: BatchGrid, throughput: np.ndarray, sqr, var, init_batch_size) -> BatchChoice:
    """The legal candidate of most goodput per allocation of ``g``, given its
    ``grid_throughput`` and the gradient statistics (scalars or per allocation)."""
    return _pick(g, throughput, sqr, var, init_batch_size)


def _allocations(nodes, replicas) -> tuple[np.ndarray, np.ndarray]:
    nodes = np.atleast_1d(np.asarray(nodes, dtype=float))
    replicas = np.atleast_1d(np.asarray(replicas, dtype=float))
    return np.broadcast_arrays(nodes, replicas)


def batch_grid(limits: JobLimits | LimitArrays, nodes, replicas,
               num_candidates: int = 50) -> BatchGrid:
    """``num_candidates`` geometric candidates in [max(M0, min_m*R), max_batch]."""
    nodes, replicas = _allocations(nodes, replicas)
    lo_m, hi_m = limits.min_local_bsz, limits.max_local_bsz
    lo = np.maximum(limits.init_batch_size, lo_m * replicas)
    hi = np.maximum(lo, limits.max_batch_size)
    frac = np.linspace(0.0, 1.0, num_candidates)[:, None]
    batch = np.exp(np.log(lo) + frac * (np.log(hi) - np.log(lo)))
    micro, accum = split_batch(batch, replicas, limits)
    total = replicas * micro * (accum + 1)
    valid = (micro >= lo_m) & (micro <= hi_m) & (total <= hi + 1e-8)
    return BatchGrid(nodes, replicas, micro, accum, total, valid)


def _throughput(p: np.ndarray, g: BatchGrid) -> np.ndarray:
    return g.total / step_time(p, g.nodes, g.replicas, g.micro, g.accum)


def _pick(g: BatchGrid, throughput: np.ndarray, sqr, var, init_batch_size) -> BatchChoice:
    scale = g.total / init_batch_size
    good = np.where(g.valid, throughput * (gain(sqr, var, scale) / scale), 0.0)
    idx = np.argmax(good, axis=0)
    cols = np.arange(good.shape[1])
    return BatchChoice(good[idx, cols], g.micro[idx, cols].astype(int),
                       g.accum[idx, cols].astype(int))


_MEMO_SIZE = 4
"""Allocations per call up to which ``GoodputModel.optimize`` memoizes."""


@functools.lru_cache(maxsize=4096)
def _memo_grid(limits: JobLimits, nodes: bytes, replicas: bytes, n: int) -> BatchGrid:
    g = batch_grid(limits, np.frombuffer(nodes), np.frombuffer(replicas), n)
    for a in (g.micro, g.accum, g.total, g.valid):
        a.setflags(write=False)  # shared by every later call
    return g


@functools.lru_cache(maxsize=4096)
def _memo_throughput(perf: PerfParams, limits: JobLimits, nodes: bytes, replicas: bytes,
                     n: int) -> np.ndarray:
    return _throughput(perf.as_array(), _memo_grid(limits, nodes, replicas, n))


def best_batches(p: np.ndarray, sqr, var, init_batch_size, limits: JobLimits | LimitArrays,
                 nodes, replicas, num_candidates: int = 50) -> BatchChoice:
    """Best goodput and its batch per allocation (nodes, replicas): each
    candidate of :func:`batch_grid` run as ``split_batch`` runs it
    (accumulation where the micro-batch limit binds, two micro-batches on one
    replica above M0), the legal one of most goodput.

    One job's model (``p`` of shape (7,), scalars elsewhere) or many at once:
    ``p`` of shape (7, n) and every other argument one entry per allocation
    (``stacked_optimize``), so a policy evaluates all its jobs' tables in one
    call. Each allocation's figures come from the same arithmetic either way."""
    g = batch_grid(limits, nodes, replicas, num_candidates)
    return _pick(g, _throughput(p, g), sqr, var, init_batch_size)


def stacked_optimize(models: Sequence[GoodputModel], limits: Sequence[JobLimits],
                     owner: np.ndarray, nodes: np.ndarray, replicas: np.ndarray) -> BatchChoice:
    """``GoodputModel.optimize`` for many jobs in one call: allocation i is
    job ``owner[i]``'s (``models[owner[i]]`` within ``limits[owner[i]]``)."""
    perf = np.array([m.perf.as_array() for m in models]).T[:, owner]
    sqr = np.array([m.grad.sqr for m in models])[owner]
    var = np.array([m.grad.var for m in models])[owner]
    m0 = np.array([m.init_batch_size for m in models])[owner]
    return best_batches(perf, sqr, var, m0, LimitArrays.of(limits, owner), nodes, replicas)
