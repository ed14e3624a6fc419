"""Gavel's finish-time fairness (``gavel-ftf-oracle``), an oracle baseline.

Gavel (OSDI 2020) offers, besides max-sum-throughput, an objective that
minimizes the worst finish-time-fairness ratio

    rho_j(x) = (age_j + R_j / T_j(x)) / (age_j + R_j / T_iso_j),

with R_j the job's remaining optimizer steps, T_j(x) = sum_k T[j, k] x[j, k]
its steps/s under the time fractions x, and T_iso_j its steps/s on an equal
1/m share of every kind (m jobs; a gang of size[j, k] runs a fraction
min(1, slots_k / (m size[j, k])) of the time on kind k, scaled to at most one
in all). For a fixed rho, "every rho_j <= rho" is linear in x (T_j(x) >=
R_j / (rho D_j - age_j), D_j the denominator), so the min-max is found by
bisection on rho over feasibility LPs (``scipy.optimize.linprog``), and among
the x that reach it the one of most total throughput is kept. The rounds then
realize x exactly as ``gavel`` does.

R_j comes from the simulator's truth (``JobView.oracle``): a real scheduler
does not know how many steps a job has left, hence the name. Departures from
Gavel's code: the time a job has been isolated-equivalent is taken as its age
(Gavel accumulates it round by round), and T comes from the jobs' own models
as in ``gavel``, not from profiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from coadapt.policies.base import Snapshot, register
from coadapt.policies.estimates import fixed_batch
from coadapt.policies.gavel import Gavel, max_throughput
from coadapt.policies.options import apply_options, with_options


def isolated_throughput(snap: Snapshot, sizes: np.ndarray, tput: np.ndarray) -> np.ndarray:
    """Steps/s of each job on a 1/m share of every kind (see the module docstring)."""
    m = tput.shape[0]
    slots = np.array([snap.slots_of_kind(k) for k in snap.kinds], dtype=float)
    share = np.minimum(1.0, slots[None, :] / (m * np.maximum(sizes, 1)))
    share /= np.maximum(1.0, share.sum(axis=1, keepdims=True))
    return (share * tput).sum(axis=1)


@register(primary=False)
@with_options(tolerance="relative width of rho's bracket at which bisection stops",
              max_steps="most bisection steps on rho")
@dataclass
class GavelFTF(Gavel):
    name: str = "gavel-ftf-oracle"
    uses_oracle: ClassVar[bool] = True
    tolerance: float = 1e-3  # relative width of rho's bracket at which bisection stops
    max_steps: int = 40

    def __post_init__(self) -> None:
        apply_options(self)

    def remaining(self, snap: Snapshot) -> np.ndarray:
        out = []
        for job in snap.jobs:
            assert job.oracle is not None, "gavel-ftf-oracle needs oracle data from the engine"
            out.append(max(float(job.oracle.remaining_iterations(fixed_batch(job))), 0.0))
        return np.array(out)

    def fractions(self, snap: Snapshot, sizes: np.ndarray, tput: np.ndarray) -> np.ndarray:
        """The time fractions of least worst rho (most throughput among them)."""
        left = self.remaining(snap)
        age = np.array([j.age for j in snap.jobs], dtype=float)
        iso = isolated_throughput(snap, sizes, tput)
        fair = (left > 0) & (iso > 0)
        denom = np.where(fair, age + left / np.where(iso > 0, iso, 1.0), 1.0)

        def reach(rho: float) -> np.ndarray | None:
            slack = rho * denom - age
            if np.any(fair & (slack <= 0)):
                return None
            floor = np.where(fair, left / np.where(slack > 0, slack, 1.0), 0.0)
            return max_throughput(snap, sizes, tput, floor)

        lo = float(np.max(age[fair] / denom[fair])) if fair.any() else 0.0
        hi, best = max(lo, 1.0), None
        for _ in range(self.max_steps):  # an upper end that every job can reach
            best = reach(hi)
            if best is not None:
                break
            lo, hi = hi, 2 * hi
        if best is None:  # no rho is reachable (a job no kind can run): plain Gavel
            return super().fractions(snap, sizes, tput)
        for _ in range(self.max_steps):
            if hi - lo <= self.tolerance * hi:
                break
            mid = (lo + hi) / 2
            got = reach(mid)
            if got is None:
                lo = mid
            else:
                hi, best = mid, got
        return best
