"""How fast this machine is right now, relative to its calibration.

A shared machine's speed drifts: on the 2-core VM of this project the same
1-worker step measured 22-32 ms for the CNN within one hour, far more than
the error a simulator should be judged by. Before each live run a short probe
times every job type of the workload at (1 worker, M0) alone on one core and
compares it with the calibration's steady step at the same configuration;
the median ratio is recorded in the live log's header, and the comparison
simulation scales every measured time by it (``LiveCosts.scaled``). The probe
runs before t = 0, so it is a measurement, not a peek at the run.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coadapt.jobs.registry import JOB_TYPES
from coadapt.live.calibrate import _launch, _Run, _segments, _steady, _train
from coadapt.sim.costs import LiveCosts


def speed_probe(apps: Sequence[str], costs: LiveCosts, core: int,
                seconds: float = 4.0) -> dict[str, Any]:
    """``{"factor": median ratio, "types": {app: ratio}}``; a factor above 1
    means the machine is slower now than when it was calibrated."""
    ratios: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="coadapt-probe-") as tmp:
        for app in sorted(set(apps)):
            m0 = JOB_TYPES[app].init_batch_size
            ref = next((p for p in costs.types[app].steps
                        if p.workers == 1 and p.local_bsz == m0), None) \
                if app in costs.types else None
            if ref is None:
                continue
            run = _Run.new(app, Path(tmp), app)
            _train([(run, _launch(run, 1, m0, 1e9, (core,), resume=False))], seconds)
            ratios[app] = _steady(_segments(run)[0]) / ref.step
    factor = statistics.median(ratios.values()) if ratios else 1.0
    return {"factor": factor, "types": ratios, "seconds": seconds, "core": core}
