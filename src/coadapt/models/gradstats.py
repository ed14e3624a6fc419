"""Gradient-noise statistics: the per-step estimators and their smoothing.

Pure float math (no torch) so that the worker, the profiler and the simulator
share one definition and it can be unit-tested against hand-computed values.

Notation (docs/architecture.md, "The model"): K micro-batches per optimizer step (replicas x
accumulation steps), L = mean of the micro-batches' local squared gradient
norms, T = squared norm of the averaged gradient, S = M / M0.
"""

from __future__ import annotations

from dataclasses import dataclass

VAR_FLOOR = 1e-6
"""Lower bound on the smoothed variance (keeps the gain finite)."""


def estimate(local_sqr_mean: float, total_sqr: float, count: int,
             scale: float) -> tuple[float, float]:
    """Unbiased (grad_sqr, grad_var) from K >= 2 independent micro-batch gradients.

    grad_sqr = (K*T - L)/(K-1) estimates |g|^2; grad_var = S*(L - T)/(K-1)
    estimates tr(Sigma)/M0 (the variance of a gradient at batch M0).
    """
    if count < 2:
        raise ValueError(f"estimate needs count >= 2 micro-batches, got {count}")
    k = float(count)
    grad_sqr = (k * total_sqr - local_sqr_mean) / (k - 1.0)
    grad_var = scale * (local_sqr_mean - total_sqr) / (k - 1.0)
    return grad_sqr, grad_var


def estimate_differenced(prev_sqr: float, cur_sqr: float, pair_sum_sqr: float,
                         scale: float) -> tuple[float, float]:
    """K = 1 estimator from two consecutive steps' gradients g1, g2 at batch scale S.

    Treats the pair as K = 2 micro-batches of a batch twice as large:
    L = (|g1|^2 + |g2|^2)/2, T = |(g1+g2)/2|^2 = pair_sum_sqr/4, scale 2S.
    Biased (the two gradients are taken at different parameters).
    """
    local_mean = 0.5 * (prev_sqr + cur_sqr)
    total = 0.25 * pair_sum_sqr
    return estimate(local_mean, total, 2, 2.0 * scale)


def gain(grad_sqr: float, grad_var: float, scale: float) -> float:
    """AdaScale gain r(S) = (var + sqr) / (var/S + sqr), in [1, S] for S >= 1."""
    return (grad_var + grad_sqr) / (grad_var / scale + grad_sqr)


def noise_scale(grad_sqr: float, grad_var: float, init_batch_size: int) -> float:
    """Gradient noise scale phi = M0 * var / sqr (inf when sqr is 0)."""
    if grad_sqr <= 0.0:
        return float("inf")
    return init_batch_size * grad_var / grad_sqr


@dataclass
class GradStatsEMA:
    """Bias-corrected EMA of (grad_sqr, grad_var) with theta = 0.999**S.

    b <- theta*b + (1-theta)*x; u <- theta*u + (1-theta); avg = b/u. Estimates
    from the biased K = 1 estimator are replaced (state reset) by the first
    unbiased one, as AdaptDL does.
    """

    sqr_biased: float = 0.0
    var_biased: float = 0.0
    unbias: float = 0.0
    biased: bool = False
    updates: int = 0

    def update(self, grad_sqr: float, grad_var: float, scale: float, *,
               biased: bool = False) -> None:
        if self.biased and not biased:
            self.reset()
        theta = 0.999 ** scale
        self.sqr_biased = theta * self.sqr_biased + (1.0 - theta) * grad_sqr
        self.var_biased = theta * self.var_biased + (1.0 - theta) * grad_var
        self.unbias = theta * self.unbias + (1.0 - theta)
        self.biased = biased
        self.updates += 1

    def reset(self) -> None:
        self.sqr_biased = self.var_biased = self.unbias = 0.0
        self.biased = False
        self.updates = 0

    @property
    def ready(self) -> bool:
        return self.unbias > 0.0

    @property
    def sqr(self) -> float:
        """Smoothed grad_sqr, clipped at 0 (nan before the first update)."""
        if not self.ready:
            return float("nan")
        return max(self.sqr_biased / self.unbias, 0.0)

    @property
    def var(self) -> float:
        """Smoothed grad_var, floored at VAR_FLOOR (nan before the first update)."""
        if not self.ready:
            return float("nan")
        return max(self.var_biased / self.unbias, VAR_FLOOR)

    def gain(self, scale: float) -> float:
        """r(S) from the smoothed statistics; 1.0 before any estimate exists."""
        if not self.ready:
            return 1.0
        return gain(self.sqr, self.var, scale)

    def state_dict(self) -> dict[str, float | bool | int]:
        return {"sqr_biased": self.sqr_biased, "var_biased": self.var_biased,
                "unbias": self.unbias, "biased": self.biased, "updates": self.updates}

    @classmethod
    def from_state_dict(cls, state: dict[str, float | bool | int]) -> GradStatsEMA:
        return cls(sqr_biased=float(state["sqr_biased"]), var_biased=float(state["var_biased"]),
                   unbias=float(state["unbias"]), biased=bool(state["biased"]),
                   updates=int(state["updates"]))
