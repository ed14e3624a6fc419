"""The Pollux goodput model: throughput, statistical efficiency, speedup."""

from coadapt.models.goodput import (
    GoodputModel,
    GradParams,
    PerfParams,
    efficiency,
    fit_perf_params,
    gain,
)

__all__ = ["GoodputModel", "GradParams", "PerfParams", "efficiency", "fit_perf_params", "gain"]
