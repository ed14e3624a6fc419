"""Importer for the Sia (SOSP 2023) artifact's per-GPU-type profiles.

Reads ``<dir>/traces/<model>/placements[-<type>].csv``, ``scalability[-<type>].csv``
and ``validation-<M>.csv`` at run time from a path the user gives; nothing of
that data is shipped. A model's own tables are the suffix-less files (the
Pollux artifact's originals, so it reads exactly as ``adaptdl:`` does); its
``by_kind`` holds one profile per GPU type, sharing the validation tables and
limits, since statistical efficiency does not depend on the hardware.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import polars as pl

from coadapt.world.names import SOSP23_CLUSTER  # noqa: F401 (re-exported)
from coadapt.world.profiles.adaptdl import _SCHEMAS, load_adaptdl_app, read_table
from coadapt.world.profiles.profile import AppProfile, ProfileError

log = logging.getLogger(__name__)

# The Sia study's setting, from the reference README (shared/reference/sia/README.md,
# "The Sia study's setting") and the artifact it describes (siasosp23/artifacts,
# sia-simulator/: sia.py get_restart_penalty, simulator_config.py SLOWDOWNS and
# cluster_nnodes).
# The policy's restart penalty S (seconds). ncf and gpt_pmp are not named in the
# README; the artifact gives every model it does not name its default, 30 s.
SOSP23_RESTART_S: dict[str, float] = {
    "deepspeech2": 25, "cifar10": 30, "yolov3": 45, "bert": 120, "imagenet": 250,
    "ncf": 30, "gpt_pmp": 30,
}
# The simulated checkpoint-restore delay (seconds; the artifact's applications.py
# rescale_time), which differs from the policy's penalty for cifar10, yolov3, ncf.
SOSP23_RESCALE_S: dict[str, float] = {
    "deepspeech2": 25, "cifar10": 50, "yolov3": 80, "bert": 120, "imagenet": 250,
    "ncf": 15, "gpt_pmp": 30,
}
# Calibration factors on the profiles' step times. The artifact divides the
# simulated goodput by them, which equals scaling step and sync time alike.
SOSP23_STEP_SCALE: dict[str, float] = {
    "cifar10": 1.8, "ncf": 1.5, "imagenet": 1.2, "yolov3": 1.2, "bert": 1.2,
    "deepspeech2": 1.2, "gpt_pmp": 1.0,
}

_KIND_FILE = re.compile(r"placements-(.+)\.csv")


def _kind_profile(folder: Path, kind: str, ref: AppProfile) -> AppProfile:
    """The step tables measured on GPU type ``kind``; all else from ``ref``."""
    placements = read_table(folder / f"placements-{kind}.csv", _SCHEMAS["placements.csv"])
    scal_path = folder / f"scalability-{kind}.csv"
    scalability = (read_table(scal_path, _SCHEMAS["scalability.csv"])
                   if scal_path.exists() else None)
    return replace(ref, placements=placements, scalability=scalability,
                   source=f"sia:{folder}@{kind}", by_kind={}, _cache={})


def load_sia_app(folder: Path) -> AppProfile:
    """One model: the reference profile as ``adaptdl:`` builds it, plus its kinds."""
    ref = load_adaptdl_app(folder)
    kinds = sorted(m.group(1) for p in folder.glob("placements-*.csv")
                   if (m := _KIND_FILE.fullmatch(p.name)))
    ref = replace(ref, source=f"sia:{folder}", _cache={})
    by_kind = {k: _kind_profile(folder, k, ref) for k in kinds}
    return replace(ref, by_kind=by_kind, _cache={})


def load_sia(root: str | Path) -> dict[str, AppProfile]:
    """All models under ``root`` (the reference folder or its traces/). A model
    without a suffix-less ``placements.csv`` is skipped with a warning: that is
    gpt_pmp, a pipeline-parallel model whose tables time one stage per
    micro-batch, which a data-parallel profile cannot represent."""
    root = Path(root)
    traces = root / "traces" if (root / "traces").is_dir() else root
    if not traces.is_dir():
        raise ProfileError(f"{root}: no such folder; pass sia:PATH to the Sia reference data "
                           "(e.g. ../shared/reference/sia)")
    apps: dict[str, AppProfile] = {}
    for folder in sorted(p for p in traces.iterdir() if p.is_dir()):
        if (folder / "placements.csv").exists():
            apps[folder.name] = load_sia_app(folder)
        elif any(folder.glob("placements-*.csv")):
            log.warning("%s: skipped, no placements.csv (a pipeline-parallel model such as "
                        "gpt_pmp cannot be represented as a data-parallel profile)", folder)
    if not apps:
        raise ProfileError(f"{traces}: no model folders with placements.csv")
    return apps


def _scaled(df: pl.DataFrame | None, factor: float) -> pl.DataFrame | None:
    if df is None:
        return None
    return df.with_columns(pl.col("step_time") * factor, pl.col("sync_time") * factor)


def _scale_one(prof: AppProfile, factor: float) -> AppProfile:
    return replace(prof, placements=_scaled(prof.placements, factor),
                   scalability=_scaled(prof.scalability, factor),
                   by_kind={k: _scale_one(p, factor) for k, p in prof.by_kind.items()},
                   _cache={})


def scale_steps(profiles: Mapping[str, AppProfile],
                factors: Mapping[str, float]) -> dict[str, AppProfile]:
    """Copies whose step and sync times (own tables and every kind's) are
    multiplied by the model's factor (1 for a model ``factors`` does not name),
    as the Sia study calibrates its profiles (``SOSP23_STEP_SCALE``)."""
    return {name: _scale_one(p, float(factors.get(name, 1.0))) for name, p in profiles.items()}
