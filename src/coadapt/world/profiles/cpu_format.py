"""The on-disk format of a measured CPU job profile, ``profiles/<type>/``.

It extends the AdaptDL trace layout (``placements.csv``, ``validation-<M>.csv``)
so the same simulator code reads both, and adds what AdaptDL kept implicit: the
job's limits and target, the machine it was measured on, the fitted throughput
parameters, the spread of the timings and every raw step (``timings.csv``), so
a reader can judge how much to trust a number and re-derive it.

Files are small and parsed with :mod:`csv` row by row, so a bad value is
reported as ``file:line: field 'x': ...`` rather than as a dtype error.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import socket
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from coadapt.models.batching import JobLimits
from coadapt.util.paths import name_problem
from coadapt.world.checks import MAX_COUNT, finite, parse_json, read_text, shown
from coadapt.world.profiles.efficiency import SamplesToTarget
from coadapt.world.profiles.profile import AppProfile, ProfileError, Spread
from coadapt.world.profiles.tables import read_csv_checked, read_csv_loose

FORMAT_NAME = "coadapt-cpu-profile"
FORMAT_VERSION = 1

PLACEMENT_FIELDS: dict[str, type] = {
    "placement": str, "local_bsz": int, "step_time": float, "sync_time": float,
}
PLACEMENT_EXTRA: dict[str, type] = {
    "cpu_time": float, "step_time_p25": float, "step_time_p75": float, "repeats": int,
}
VALIDATION_FIELDS: dict[str, type] = {
    "progress": float, "iteration": int, "metric": float, "grad_sqr": float, "grad_var": float,
}
VALIDATION_EXTRA: dict[str, type] = {"samples": int, "wall_time": float}
# the columns of timings.csv and curves.csv that are read (measured_spread), when present
TIMINGS_CHECKED: dict[str, type] = {"workers": int, "local_bsz": int, "run": int,
                                    "step_time": float, "sync_time": float, "contended": bool}
CURVES_CHECKED: dict[str, type] = {"batch_size": int, "seed": int, "progress": float,
                                   "grad_sqr": float, "grad_var": float}
_VALIDATION_RE = re.compile(r"^validation-([0-9]+)\.csv$")


@dataclass(frozen=True)
class JobMeta:
    """What the simulator needs to know about a job type besides its measurements.

    In ``profile.json`` the limits' fields sit flat in the "job" object, beside
    the name (``to_json``)."""

    name: str
    limits: JobLimits
    target: float | None
    higher_is_better: bool
    eval_every: float | None = None
    dataset_size: int | None = None
    metric: str | None = None


    def to_json(self) -> dict[str, Any]:
        """The "job" object of ``profile.json``: name, the limits' fields, the rest."""
        rest = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("name", "limits")}
        return {"name": self.name, **asdict(self.limits), **rest}


@dataclass
class CpuProfile:
    """Everything in one ``profiles/<type>/`` folder, before conversion to AppProfile."""

    meta: JobMeta
    placements: pl.DataFrame
    validation: dict[int, pl.DataFrame]
    info: dict[str, Any] = field(default_factory=dict)  # the rest of profile.json
    timings: pl.DataFrame | None = None
    path: Path | None = None
    curves: pl.DataFrame | None = None  # every run to target, all seeds (long form)


def machine_info() -> dict[str, Any]:
    """Identify the machine so profiles from different hosts are never confused."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:  # the installed version, read without importing torch
        torch_version: str | None = version("torch")
    except PackageNotFoundError:  # pragma: no cover - torch is a hard dependency
        torch_version = None
    return {
        "hostname": socket.gethostname(),
        "cpu_model": cpu,
        "nproc": os.cpu_count(),
        "torch": torch_version,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def write_cpu_profile(out_dir: str | Path, profile: CpuProfile) -> Path:
    """Write ``profile.json``, ``placements.csv``, ``validation-<M>.csv`` and ``timings.csv``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("validation-*.csv"):
        old.unlink()  # a stale curve from an earlier run must not survive
    cols = list(PLACEMENT_FIELDS) + [c for c in PLACEMENT_EXTRA if c in profile.placements.columns]
    profile.placements.select(cols).sort("placement", "local_bsz").write_csv(out / "placements.csv")
    files: dict[str, Any] = {"placements": "placements.csv", "validation": {}}
    for bsz, frame in sorted(profile.validation.items()):
        vcols = list(VALIDATION_FIELDS) + [c for c in VALIDATION_EXTRA if c in frame.columns]
        name = f"validation-{int(bsz)}.csv"
        frame.select(vcols).write_csv(out / name)
        files["validation"][str(int(bsz))] = name
    if profile.timings is not None:
        profile.timings.write_csv(out / "timings.csv", float_precision=6)
        files["timings"] = "timings.csv"
    if profile.curves is not None and profile.curves.height:
        profile.curves.write_csv(out / "curves.csv")
        files["curves"] = "curves.csv"
    doc = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "job": profile.meta.to_json()}
    doc.update({k: v for k, v in profile.info.items() if k not in ("format", "version", "job")})
    doc.setdefault("machine", machine_info())
    doc["files"] = files
    (out / "profile.json").write_text(json.dumps(_finite(doc), indent=2) + "\n", encoding="utf-8")
    return out


def _finite(value: Any) -> Any:
    """JSON has no NaN: write None instead, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _json_line(text: str, key: str) -> int | None:
    """Line number of the first ``"key":`` in a JSON text, to point at a bad field."""
    needle = f'"{key}"'
    for i, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return i
    return None


def _read_meta(path: Path) -> tuple[JobMeta, dict[str, Any]]:
    if not path.is_file():
        raise ProfileError(f"{path}: missing (every profile folder needs a profile.json)")
    text = read_text(path, ProfileError, "a profile.json")
    doc = parse_json(path, text, ProfileError, "not valid JSON")
    if not isinstance(doc, dict):
        raise ProfileError(f"{path}:1: expected a JSON object")

    def bad(key: str, why: str, name: str | None = None) -> ProfileError:
        line = _json_line(text, key)
        return ProfileError(f"{path}:{line if line else '?'}: field '{name or key}': {why}")

    if doc.get("format") != FORMAT_NAME:
        raise bad("format", f"expected {FORMAT_NAME!r}, got {shown(doc.get('format'))}")
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= FORMAT_VERSION:
        raise bad("version", f"expected an integer from 1 to {FORMAT_VERSION}, got {shown(version)}")
    job = doc.get("job")
    if not isinstance(job, dict):
        raise bad("job", "missing or not an object")
    values: dict[str, Any] = {}
    for key, (kind, optional) in _JOB_FIELDS.items():
        value = job.get(key)
        if value is None and optional:
            values[key] = None
            continue
        if key not in job:
            raise bad("job", f"lacks required field '{key}'")
        ok = (isinstance(value, (int, float) if kind is float else kind)
              and not (kind is not bool and isinstance(value, bool)))
        if kind is int:
            ok, want = ok and 1 <= value <= MAX_COUNT, f"an integer >= 1 and <= {MAX_COUNT:g}"
        elif kind is float:
            ok = ok and finite(value) and (value > 0 if key == "eval_every" else value >= 0)
            want = f"a finite number {'> 0' if key == 'eval_every' else '>= 0'}"
        else:
            want = "a string" if kind is str else "true or false"
        if ok and key == "name" and name_problem(value):
            ok, want = False, f"a name ({name_problem(value)})"
        if not ok:
            raise bad(key, f"expected {want}, got {shown(value)}")
        values[key] = value
    lim = JobLimits(**{f.name: values.pop(f.name) for f in fields(JobLimits)})
    if not lim.min_local_bsz <= lim.max_local_bsz:
        raise bad("min_local_bsz", f"{lim.min_local_bsz} > max_local_bsz {lim.max_local_bsz}")
    if not lim.init_batch_size <= lim.max_batch_size:
        raise bad("init_batch_size",
                  f"{lim.init_batch_size} > max_batch_size {lim.max_batch_size}")
    for key in ("machine", "perf_params", "curves"):
        if doc.get(key) is not None and not isinstance(doc[key], dict):
            raise bad(key, f"expected an object, got {shown(doc[key])}")
    for key, value in (doc.get("perf_params") or {}).items():
        if not finite(value) or value < 0:
            raise bad(key, f"expected a finite number >= 0, got {shown(value)}",
                      f"perf_params.{key}")
    return JobMeta(limits=lim, **values), doc


# field of the "job" object -> (type, may be null or absent); float: a finite number
_JOB_FIELDS: dict[str, tuple[type, bool]] = {
    "name": (str, False), "init_batch_size": (int, False), "max_batch_size": (int, False),
    "min_local_bsz": (int, False), "max_local_bsz": (int, False),
    "max_replicas": (int, False), "target": (float, True),
    "higher_is_better": (bool, False), "eval_every": (float, True),
    "dataset_size": (int, True), "metric": (str, True),
}


def read_cpu_profile(path: str | Path, require_validation: bool = True) -> CpuProfile:
    """Read and check one ``profiles/<type>/`` folder.

    ``require_validation=False`` accepts a folder without runs to target (for
    reports on a partial profile; the simulator cannot use one)."""
    root = Path(path)
    if not root.is_dir():
        raise ProfileError(f"{root}: not a profile folder")
    meta, doc = _read_meta(root / "profile.json")
    placements = read_csv_checked(root / "placements.csv", PLACEMENT_FIELDS, PLACEMENT_EXTRA)
    bad_sync = placements.filter(pl.col("sync_time") > pl.col("step_time") * 1.000001)
    if bad_sync.height:
        raise ProfileError(f"{root / 'placements.csv'}: field 'sync_time': exceeds step_time "
                           f"for placement {bad_sync['placement'][0]} "
                           f"local_bsz {bad_sync['local_bsz'][0]}")
    validation: dict[int, pl.DataFrame] = {}
    for file in sorted(root.glob("validation-*.csv")):
        match = _VALIDATION_RE.match(file.name)
        if not match:
            raise ProfileError(f"{file}: name must be validation-<batch size>.csv")
        frame = read_csv_checked(file, VALIDATION_FIELDS, VALIDATION_EXTRA)
        for col in ("progress", "iteration"):
            steps = frame[col].diff().drop_nulls()
            if (steps < 0).any():
                row = int((steps < 0).arg_max()) + 3  # header is line 1, diff drops row 1
                raise ProfileError(f"{file}:{row}: field '{col}': decreases")
        batch = int(match.group(1)) if len(match.group(1)) <= 12 else 0
        if not 1 <= batch <= MAX_COUNT:
            raise ProfileError(f"{file}: batch size {match.group(1)} in the name: expected "
                               f"1 to {MAX_COUNT:g}")
        validation[batch] = frame
    if not validation and require_validation:
        raise ProfileError(f"{root}: no validation-<M>.csv files")
    extra = {name: read_csv_loose(root / f"{name}.csv", checked)
             for name, checked in (("timings", TIMINGS_CHECKED), ("curves", CURVES_CHECKED))
             if (root / f"{name}.csv").exists()}
    return CpuProfile(meta, placements, validation, doc, extra.get("timings"), root,
                      extra.get("curves"))


def _median_cv(frame: pl.DataFrame, keys: list[str], cols: list[str]) -> list[float]:
    """Per column: the median over groups ``keys`` (with >= 2 rows) of the
    group's std (ddof 1) / mean; 0.0 when no group has two rows. Rounded to
    6 significant digits, so that polars' summation order cannot change a
    simulated run's draws in the last bit."""
    cv = frame.sort(keys).group_by(keys, maintain_order=True).agg(
        pl.len().alias("_n"), *[(pl.col(c).std() / pl.col(c).mean()).alias(c) for c in cols])
    cv = cv.filter(pl.col("_n") >= 2)
    out = []
    for c in cols:
        v = cv[c].to_numpy().astype(float)
        v = v[np.isfinite(v)]
        out.append(float(f"{np.median(v):.6g}") if len(v) else 0.0)
    return out


def measured_spread(timings: pl.DataFrame | None, curves: pl.DataFrame | None) -> Spread:
    """The spread of a job type's measurements between repeats (see :class:`Spread`).

    ``step_cv``, ``sync_cv``: in ``timings.csv``, the median step (sync) time
    of every run (a separate worker-group launch) of a configuration (workers,
    local_bsz), keeping the runs the profile's medians keep (contended runs
    out when the configuration has a clean one); per configuration with >= 2
    such runs, the coefficient of variation (std with ddof 1 / mean) of those
    run medians; then the median over configurations. Run-to-run, not
    step-to-step: a job reports a median over many steps, and what moves that
    median is the machine's state between launches.

    ``noise_cv``: in ``curves.csv`` (every seed's run to target), the k-th
    validation row of each (batch_size, seed) run, by progress (the k-th
    multiple of ``eval_every`` for every seed); per (batch_size, k) reached by
    >= 2 seeds, the CV over seeds of the gradient noise scale phi (computed as
    grad_var / grad_sqr, to which phi = M0 * grad_var / grad_sqr is
    proportional); then the median over those (batch_size, k).

    A missing file or column, or too few repeats, leaves a field 0.0."""
    step_cv = sync_cv = noise_cv = 0.0
    cell = ["workers", "local_bsz"]
    if timings is not None and {*cell, "run", "step_time", "sync_time"} <= set(timings.columns):
        kept = timings
        if "contended" in timings.columns:
            clean = (~pl.col("contended")).any().over(cell)
            kept = timings.filter(~pl.col("contended") | ~clean)
        runs = kept.group_by([*cell, "run"]).agg(pl.col("step_time").median(),
                                                 pl.col("sync_time").median())
        step_cv, sync_cv = _median_cv(runs, cell, ["step_time", "sync_time"])
    run = ["batch_size", "seed"]
    if curves is not None and {*run, "progress", "grad_sqr", "grad_var"} <= set(curves.columns):
        rows = (curves.filter((pl.col("grad_sqr") > 0) & (pl.col("grad_var") > 0))
                .sort(*run, "progress")
                .with_columns((pl.col("grad_var") / pl.col("grad_sqr")).alias("phi"),
                              pl.int_range(pl.len()).over(run).alias("_k")))
        (noise_cv,) = _median_cv(rows, ["batch_size", "_k"], ["phi"])
    return Spread(step_cv, sync_cv, noise_cv)


def to_app_profile(profile: CpuProfile) -> AppProfile:
    """Convert to the simulator's :class:`coadapt.world.profiles.profile.AppProfile`."""
    meta, machine = profile.meta, profile.info.get("machine", {})
    source = (f"{FORMAT_NAME} v{profile.info.get('version')} {profile.path or ''} "
              f"({machine.get('hostname', '?')}, {machine.get('cpu_model', '?')}, "
              f"{machine.get('date', '?')})")
    return AppProfile(
        name=meta.name, limits=meta.limits, placements=profile.placements, scalability=None,
        validation=profile.validation,
        completion_epochs=None, target=meta.target, higher_is_better=meta.higher_is_better,
        source=source, spread=measured_spread(profile.timings, profile.curves),
        samples_to_target=_samples_to_target(profile),
    )


def _samples_to_target(profile: CpuProfile) -> SamplesToTarget | None:
    where = f"{profile.path / 'profile.json' if profile.path else 'profile.json'}"
    try:
        return SamplesToTarget.from_profile_json(profile.info.get("curves") or {}, where)
    except ValueError as exc:
        raise ProfileError(str(exc)) from None


def load_cpu_profile(path: str | Path) -> AppProfile:
    """Read ``profiles/<type>/`` into an AppProfile; raises :class:`ProfileError`."""
    return to_app_profile(read_cpu_profile(path))


def load_cpu_profiles(root: str | Path) -> dict[str, AppProfile]:
    """Every ``<root>/<type>/profile.json`` folder as ``{type name: AppProfile}``."""
    base = Path(root)
    if not base.is_dir():
        raise ProfileError(f"{base}: {'not a folder' if base.exists() else 'profiles folder not found'}")
    found: dict[str, AppProfile] = {}
    try:
        subs = sorted(p for p in base.iterdir() if (p / "profile.json").is_file())
    except OSError as exc:
        raise ProfileError(f"{base}: cannot list it ({exc.strerror or exc})") from None
    where: dict[str, Path] = {}
    for sub in subs:
        app = load_cpu_profile(sub)
        if app.name in found:
            raise ProfileError(f"{sub / 'profile.json'}: field 'name': {app.name!r} also "
                               f"names {where[app.name]}")
        found[app.name], where[app.name] = app, sub
    if not found:
        raise ProfileError(f"{base}: no <type>/profile.json folders")
    return found
