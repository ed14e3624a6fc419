"""Importer for the Pollux paper's published GPU traces (AdaptDL format).

Reads ``<dir>/<app>/{placements,scalability}.csv`` and ``validation-<M>.csv``
at run time from a path the user gives; nothing of that data is shipped.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from coadapt.models.batching import JobLimits
from coadapt.world.profiles.profile import AppProfile, ProfileError
from coadapt.world.profiles.tables import read_csv_checked

# Completion epochs and micro-batch overrides of the reference simulator.
EPOCHS = {"bert": 2, "cifar10": 100, "ncf": 10, "imagenet": 90, "deepspeech2": 80, "yolov3": 50}
MAX_LOCAL_BSZ = {"yolov3": 8}
# The reference simulator runs ncf on one GPU under every policy.
MAX_REPLICAS = {"ncf": 1}

_SCHEMAS = {
    "placements.csv": {"placement": pl.Utf8, "local_bsz": pl.Float64, "step_time": pl.Float64,
                       "sync_time": pl.Float64},
    "scalability.csv": {"num_nodes": pl.Float64, "num_replicas": pl.Float64,
                        "local_bsz": pl.Float64, "step_time": pl.Float64, "sync_time": pl.Float64},
    "validation": {"progress": pl.Float64, "iteration": pl.Float64, "metric": pl.Float64,
                   "grad_sqr": pl.Float64, "grad_var": pl.Float64},
}


_COUNTS = {"local_bsz", "num_nodes", "num_replicas"}
"""Columns that count samples or workers: whole numbers (kept as floats)."""


def read_table(path: Path, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """Read a CSV and check it; errors name file, line and field."""
    if not path.exists():
        raise ProfileError(f"{path}: file not found (expected columns {', '.join(schema)})")
    kinds = {col: str if dtype == pl.Utf8 else int if col in _COUNTS else float
             for col, dtype in schema.items()}
    return read_csv_checked(path, kinds).select(list(schema)).cast(schema)


def read_validation(folder: Path) -> dict[int, pl.DataFrame]:
    out = {}
    for path in sorted(folder.glob("validation-*.csv")):
        m = re.fullmatch(r"validation-([0-9]{1,12})\.csv", path.name)
        if m is None or int(m.group(1)) < 1:
            raise ProfileError(f"{path}: name must be validation-<batch size>.csv")
        out[int(m.group(1))] = read_table(path, _SCHEMAS["validation"])
    if not out:
        raise ProfileError(f"{folder}: no validation-<M>.csv files")
    return out


def load_adaptdl_app(folder: Path) -> AppProfile:
    name = folder.name
    placements = read_table(folder / "placements.csv", _SCHEMAS["placements.csv"])
    scal_path = folder / "scalability.csv"
    scalability = read_table(scal_path, _SCHEMAS["scalability.csv"]) if scal_path.exists() else None
    validation = read_validation(folder)
    min_m = int(placements["local_bsz"].min())
    max_m = MAX_LOCAL_BSZ.get(name, int(placements["local_bsz"].max()))
    return AppProfile(
        name=name,
        limits=JobLimits(init_batch_size=min(validation), max_batch_size=max(validation),
                         min_local_bsz=min_m, max_local_bsz=max_m,
                         max_replicas=MAX_REPLICAS.get(name, 64)),
        placements=placements,
        scalability=scalability,
        validation=validation,
        completion_epochs=EPOCHS.get(name),
        source=f"adaptdl:{folder}",
    )


def load_adaptdl(root: str | Path) -> dict[str, AppProfile]:
    """All applications under ``root`` (the reference folder or its traces/)."""
    root = Path(root)
    traces = root / "traces" if (root / "traces").is_dir() else root
    if not traces.is_dir():
        raise ProfileError(f"{root}: no such folder; pass adaptdl:PATH to the reference data "
                           "(e.g. ../shared/reference/adaptdl)")
    apps = {p.name: load_adaptdl_app(p) for p in sorted(traces.iterdir())
            if p.is_dir() and (p / "placements.csv").exists()}
    if not apps:
        raise ProfileError(f"{traces}: no application folders with placements.csv")
    return apps
