"""The network calibration: ring all-reduce times measured between emulated
nodes (``coadapt netbench``), the fit of the ring model to them, and the
``Network`` the simulator's truth uses instead of the declared one.

Model, per shaped bandwidth B: t(K, n) = c + 2 (K-1) a + 2 (K-1)/K n 8 / (e B),
with c the per-all-reduce overhead, a the per-hop latency (both the hosts'
and the path's, so shared by every bandwidth) and e the achieved fraction of
B (each link's own). It is linear in (c, a, 1/(e B) per B): one non-negative
least squares (``scipy.optimize.nnls``) on the points that were not CPU-bound. Points where
K processes shared too few cores (or an unshaped link) measure the CPU, not
the network: they are kept in the table, labelled, and out of the fit.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import nnls

from coadapt.world.cluster import Network

FORMAT = 1
KIND = "network-calibration"
CPU_BOUND_UTIL = 0.5  # CPU seconds per available core-second above which a point is CPU-bound


class NetworkCalibrationError(ValueError):
    """A network calibration file is missing or malformed; names file and field."""


@dataclass(frozen=True)
class NetworkFit:
    bandwidth_gbps: float
    overhead_us: float
    latency_us: float
    effective_gbps: float
    points: int
    rel_rmse: float  # of the fit over its points
    max_rel_err: float
    se_overhead_us: float
    se_latency_us: float
    se_effective_gbps: float

    @property
    def efficiency(self) -> float:
        return self.effective_gbps / self.bandwidth_gbps

    def predict(self, k: np.ndarray | float, nbytes: np.ndarray | float) -> np.ndarray:
        k, n = np.asarray(k, float), np.asarray(nbytes, float)
        return ((self.overhead_us + 2 * (k - 1) * self.latency_us) * 1e-6
                + 2 * (k - 1) / k * n * 8 / (self.effective_gbps * 1e9))


def ring_design(k: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """Columns for (c, a, 1/(e B)) in seconds: 1, 2 (K-1), ring volume in bits."""
    k, n = np.asarray(k, float), np.asarray(nbytes, float)
    return np.column_stack([np.ones_like(k), 2 * (k - 1), 2 * (k - 1) / k * n * 8])


def fit_rings(bandwidths: np.ndarray, k: np.ndarray, nbytes: np.ndarray,
              seconds: np.ndarray) -> list[NetworkFit]:
    """The ring model fitted to median all-reduce ``seconds`` at (``k``,
    ``nbytes``) on links of ``bandwidths`` Gbit/s, one fit for all: the
    overhead and per-hop latency are the hosts' and the path's, shared by
    every bandwidth; the achieved bandwidth is each link's own. Weighted by
    1/t (relative errors: small messages matter as much as large)."""
    bws, t = np.asarray(bandwidths, float), np.asarray(seconds, float)
    levels = sorted(set(bws.tolist()))
    if len(t) < len(levels) + 2:
        raise ValueError(f"network fit: {len(t)} usable points for {len(levels)} bandwidths, "
                         f"need {len(levels) + 2}")
    base = ring_design(k, nbytes)
    x = np.column_stack([base[:, :2]] + [np.where(bws == b, base[:, 2], 0.0) for b in levels])
    w = 1.0 / t
    xw = x * w[:, None]
    coef, _ = nnls(xw, t * w)
    rel = (x @ coef - t) / t
    sigma2 = float(rel @ rel) / max(len(t) - x.shape[1], 1)
    se = np.sqrt(np.clip(np.diag(sigma2 * np.linalg.pinv(xw.T @ xw)), 0, None))
    fits = []
    for j, b in enumerate(levels):
        mine = bws == b
        inv_b = max(coef[2 + j], 1e-18)
        eff = 1.0 / inv_b / 1e9
        fits.append(NetworkFit(
            bandwidth_gbps=b, overhead_us=coef[0] * 1e6, latency_us=coef[1] * 1e6,
            effective_gbps=eff, points=int(mine.sum()),
            rel_rmse=float(np.sqrt(np.mean(rel[mine] ** 2))),
            max_rel_err=float(np.max(np.abs(rel[mine]))),
            se_overhead_us=se[0] * 1e6, se_latency_us=se[1] * 1e6,
            se_effective_gbps=eff * se[2 + j] / inv_b))
    return fits


def fit_ring(bandwidth_gbps: float, k: np.ndarray, nbytes: np.ndarray,
             seconds: np.ndarray) -> NetworkFit:
    """``fit_rings`` on one bandwidth."""
    return fit_rings(np.full(len(seconds), bandwidth_gbps), k, nbytes, seconds)[0]


def host_ceiling(k: np.ndarray, nbytes: np.ndarray, seconds: np.ndarray) -> float | None:
    """The hosts' own all-reduce rate in Gbit/s of ring volume: the median over
    unshaped 2-rank points of at least 1 MiB (one rank per core; what no link
    can beat, since gloo's copies and TCP run on the same cores)."""
    k, n, t = (np.asarray(a, float) for a in (k, nbytes, seconds))
    use = (k == 2) & (n >= 2**20)
    if not use.any():
        return None
    return float(np.median(2 * (k[use] - 1) / k[use] * n[use] * 8 / t[use] / 1e9))


@dataclass(frozen=True)
class NetworkCalibration:
    fits: tuple[NetworkFit, ...]
    machine: dict[str, Any]
    date: str
    path: str = ""
    host_gbps: float | None = None  # the unshaped ceiling (host_ceiling); None: not measured

    def network(self, bandwidth_gbps: float) -> Network:
        """The measured network at ``bandwidth_gbps``: overhead and latency from
        the nearest fitted bandwidth (in log), efficiency interpolated in log
        bandwidth between the fits around it and held beyond them, but never
        above the hosts' unshaped ceiling (a faster link than the hosts can
        feed runs at the hosts' rate)."""
        fits = sorted(self.fits, key=lambda f: f.bandwidth_gbps)
        logs = np.log([f.bandwidth_gbps for f in fits])
        near = fits[int(np.argmin(np.abs(logs - math.log(bandwidth_gbps))))]
        eff = float(np.interp(math.log(bandwidth_gbps), logs, [f.efficiency for f in fits]))
        exact = any(math.isclose(f.bandwidth_gbps, bandwidth_gbps, rel_tol=1e-6) for f in fits)
        where = "measured" if exact else f"held from {near.bandwidth_gbps:g} Gbit/s"
        if self.host_gbps is not None and eff * bandwidth_gbps > self.host_gbps:
            eff = self.host_gbps / bandwidth_gbps
            where += f", capped at the hosts' {self.host_gbps:.1f} Gbit/s"
        return Network(bandwidth_gbps, latency_us=near.latency_us, overhead_us=near.overhead_us,
                       efficiency=min(eff, 1.5), source=f"netcal {where}")

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "kind": KIND, "date": self.date, "machine": self.machine,
                "fits": [asdict(f) for f in self.fits], "host_gbps": self.host_gbps}

    def describe(self) -> str:
        parts = [f"{f.bandwidth_gbps:g} Gbit/s: {f.efficiency:.2f} of nominal, "
                 f"{f.latency_us:.0f} us/hop, {f.overhead_us:.0f} us overhead "
                 f"(rel. rmse {f.rel_rmse:.1%}, {f.points} points)" for f in self.fits]
        if self.host_gbps is not None:
            parts.append(f"hosts' unshaped ceiling {self.host_gbps:.1f} Gbit/s")
        return f"{self.path or 'network calibration'} ({self.date}): " + "; ".join(parts)


def load_network_calibration(path: str | Path) -> NetworkCalibration:
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise NetworkCalibrationError(f"{path}: no such network calibration; make one with "
                                      "'coadapt netbench --out DIR'") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise NetworkCalibrationError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(raw, dict) or raw.get("kind") != KIND:
        raise NetworkCalibrationError(f"{path}: field 'kind' must be {KIND!r}; is this the "
                                      "netbench's network.json?")
    if raw.get("format") != FORMAT:
        raise NetworkCalibrationError(f"{path}: field 'format' is {raw.get('format')!r}, this "
                                      f"version reads {FORMAT}; rerun 'coadapt netbench'")
    fits = []
    names = NetworkFit.__dataclass_fields__
    for i, f in enumerate(raw.get("fits") or []):
        missing = [n for n in names if not isinstance((f or {}).get(n), int | float)]
        if missing:
            raise NetworkCalibrationError(f"{path}: fits[{i}] field {missing[0]!r} missing or "
                                          "not a number")
        fit = NetworkFit(**{n: f[n] for n in names})
        if not (fit.bandwidth_gbps > 0 and fit.effective_gbps > 0):
            raise NetworkCalibrationError(f"{path}: fits[{i}]: bandwidth_gbps and "
                                          "effective_gbps must be > 0")
        fits.append(fit)
    if not fits:
        raise NetworkCalibrationError(f"{path}: field 'fits' is empty: no bandwidth had enough "
                                      "network-bound points; rerun netbench at lower bandwidths")
    host = raw.get("host_gbps")
    if host is not None and not (isinstance(host, int | float) and host > 0):
        raise NetworkCalibrationError(f"{path}: field 'host_gbps' must be a number > 0 or null")
    return NetworkCalibration(tuple(fits), dict(raw.get("machine") or {}),
                              str(raw.get("date", "")), str(path),
                              None if host is None else float(host))


def network_for(bandwidth_gbps: float, latency_us: float,
                calibration: NetworkCalibration | None) -> Network:
    """The one place a run's network is made: declared unless a calibration is given."""
    if calibration is None:
        return Network(bandwidth_gbps, latency_us)
    return calibration.network(bandwidth_gbps)
