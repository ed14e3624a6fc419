"""The prediction a live run is judged by, written before its first job starts.

For every policy the workload is simulated on the same cluster, with the same
options and this machine's calibration, into ``OUT/prediction/<policy>/``.
Nothing the live run measures can reach it: it is on disk, with its digest in
the live log's header, before the first worker is launched. The re-simulations
after the run (at the run's measured speed, or replaying its decisions) are
labelled as what they are and never replace it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from coadapt.eventlog import log_in
from coadapt.runs.settings import RunSettings
from coadapt.runs.simulate import simulate_policy
from coadapt.world.workload import Workload
from coadapt.world.world import World

PREDICTION_DIR = "prediction"
INDEX_FILE = "prediction.json"


@dataclass(frozen=True)
class Prediction:
    policy: str
    path: str  # the prediction's event log
    digest: str  # sha256 of that log
    mean_jct_s: float | None
    makespan_s: float | None


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def predict(world: World, workload: Workload, policies: Sequence[str],
            settings: RunSettings, out: Path) -> dict[str, Prediction]:
    """Simulate every policy into ``out/prediction/<policy>/``; returns (and
    writes to ``out/prediction/prediction.json``) each log's digest."""
    root = out / PREDICTION_DIR
    result = {}
    for name in policies:
        d = root / name
        summary = simulate_policy(world, workload, name, settings, d, kind="prediction")
        result[name] = Prediction(name, str(log_in(d)), digest(log_in(d)),
                                  summary.get("avg_jct"), summary.get("makespan"))
    (root / INDEX_FILE).write_text(json.dumps({k: asdict(v) for k, v in result.items()},
                                              indent=1) + "\n")
    return result


def load_predictions(out: Path) -> dict[str, Prediction]:
    """The predictions written before the run; a log whose digest changed since
    is refused (it is no longer the prediction the run was judged by)."""
    index = out / PREDICTION_DIR / INDEX_FILE
    if not index.exists():
        return {}
    doc = json.loads(index.read_text())
    out_map = {}
    for name, p in doc.items():
        pred = Prediction(**p)
        path = Path(pred.path)
        if not path.exists() or digest(path) != pred.digest:
            raise ValueError(f"{path}: the prediction changed after it was written (digest "
                             f"{pred.digest[:12]} in {index}); it cannot be compared")
        out_map[name] = pred
    return out_map
