"""The CPU profile format: write -> read round trip, and errors that point at the problem."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from coadapt.models.batching import JobLimits
from coadapt.world.profiles.cpu_format import (
    FORMAT_NAME,
    CpuProfile,
    JobMeta,
    ProfileError,
    load_cpu_profile,
    load_cpu_profiles,
    read_cpu_profile,
    write_cpu_profile,
)

META = JobMeta(name="toy", limits=JobLimits(init_batch_size=32, max_batch_size=512,
                                           min_local_bsz=8, max_local_bsz=256, max_replicas=64),
               target=0.9, higher_is_better=True, eval_every=50, dataset_size=6400,
               metric="accuracy")


def _profile() -> CpuProfile:
    placements = pl.DataFrame({
        "placement": ["1", "1", "2", "2"], "local_bsz": [8, 64, 8, 64],
        "step_time": [0.010, 0.050, 0.014, 0.056], "sync_time": [0.0, 0.0, 0.003, 0.004],
        "cpu_time": [0.0098, 0.049, 0.010, 0.051],
        "step_time_p25": [0.009, 0.048, 0.013, 0.054],
        "step_time_p75": [0.011, 0.052, 0.015, 0.058], "repeats": [3, 3, 3, 3],
    })
    validation = {}
    for m in (32, 128):
        n = 4
        validation[m] = pl.DataFrame({
            "progress": np.arange(1, n + 1) * 50.0, "iteration": np.arange(1, n + 1) * 50 * 32 // m,
            "metric": [0.5, 0.7, 0.85, 0.92], "grad_sqr": [2.0, 1.0, 0.5, 0.3],
            "grad_var": [1.0, 1.1, 1.2, 1.3], "samples": np.arange(1, n + 1) * 50 * 32,
            "wall_time": [1.0, 2.0, 3.0, 4.0],
        })
    timings = pl.DataFrame({"type": ["toy"] * 2, "workers": [1, 1], "local_bsz": [8, 8],
                            "run": [0, 0], "step": [3, 4], "step_time": [0.01, 0.011]})
    info = {"perf_params": {"alpha_c": 0.01}, "timing": {"repeats": 3}}
    return CpuProfile(META, placements, validation, info, timings)


def test_round_trip(tmp_path: Path) -> None:
    out = write_cpu_profile(tmp_path / "toy", _profile())
    assert sorted(p.name for p in out.iterdir()) == [
        "placements.csv", "profile.json", "timings.csv", "validation-128.csv", "validation-32.csv"]
    doc = json.loads((out / "profile.json").read_text())
    assert doc["format"] == FORMAT_NAME and doc["version"] == 1
    assert {"hostname", "cpu_model", "nproc", "torch", "date"} <= set(doc["machine"])
    back = read_cpu_profile(out)
    assert back.meta == META
    assert back.info["perf_params"] == {"alpha_c": 0.01}
    assert back.placements.equals(_profile().placements.sort("placement", "local_bsz"))
    assert back.placements["placement"].dtype == pl.String
    for m, frame in _profile().validation.items():
        assert back.validation[m].equals(frame)
    app = load_cpu_profile(out)
    assert (app.name, app.limits, app.target) == ("toy", META.limits, 0.9)
    assert app.completion_epochs is None and app.scalability is None
    assert app.completion_epoch(32) == 3  # first row at/above target 0.9
    step, sync = app.throughput((2,), 8)
    assert (step, sync) == pytest.approx((0.014, 0.003))
    assert list(load_cpu_profiles(tmp_path)) == ["toy"]


def test_rewrite_drops_stale_validation(tmp_path: Path) -> None:
    prof = _profile()
    write_cpu_profile(tmp_path, prof)
    prof.validation.pop(128)
    write_cpu_profile(tmp_path, prof)
    assert not (tmp_path / "validation-128.csv").exists()


def _written(tmp_path: Path) -> Path:
    return write_cpu_profile(tmp_path / "toy", _profile())


def _edit_line(path: Path, line: int, old: str, new: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    assert old in lines[line - 1], lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    path.write_text("".join(lines))


def test_bad_number_names_file_line_field(tmp_path: Path) -> None:
    out = _written(tmp_path)
    _edit_line(out / "placements.csv", 3, "0.05", "fast")
    with pytest.raises(ProfileError, match=r"placements\.csv:3: field 'step_time'.*'fast'"):
        load_cpu_profile(out)


def test_bad_placement_and_negative(tmp_path: Path) -> None:
    out = _written(tmp_path)
    _edit_line(out / "placements.csv", 2, "1,", "x,")
    with pytest.raises(ProfileError, match=r"placements\.csv:2: field 'placement'"):
        read_cpu_profile(out)
    out = _written(tmp_path / "b")
    _edit_line(out / "validation-32.csv", 4, "0.85", "-0.85")
    with pytest.raises(ProfileError, match=r"validation-32\.csv:4: field 'metric'.*non-negative"):
        read_cpu_profile(out)


def test_missing_column_and_file(tmp_path: Path) -> None:
    out = _written(tmp_path)
    _edit_line(out / "validation-128.csv", 1, "grad_var", "gradvar")
    with pytest.raises(ProfileError, match=r"validation-128\.csv:1: field 'grad_var'"):
        read_cpu_profile(out)
    (out / "placements.csv").unlink()
    with pytest.raises(ProfileError, match=r"placements\.csv: missing"):
        read_cpu_profile(out)


def test_decreasing_progress(tmp_path: Path) -> None:
    out = _written(tmp_path)
    _edit_line(out / "validation-32.csv", 4, "150.0", "10.0")
    with pytest.raises(ProfileError, match=r"validation-32\.csv:4: field 'progress': decreases"):
        read_cpu_profile(out)


def test_bad_json_field_points_at_line(tmp_path: Path) -> None:
    out = _written(tmp_path)
    path = out / "profile.json"
    doc = json.loads(path.read_text())
    doc["job"]["max_local_bsz"] = "big"
    path.write_text(json.dumps(doc, indent=2))
    line = next(i for i, s in enumerate(path.read_text().splitlines(), 1) if "max_local_bsz" in s)
    with pytest.raises(ProfileError, match=rf"profile\.json:{line}: field 'max_local_bsz'"):
        read_cpu_profile(out)
    path.write_text("{\n  \"format\": oops\n}")
    with pytest.raises(ProfileError, match=r"profile\.json:2: not valid JSON"):
        read_cpu_profile(out)
    doc["job"]["max_local_bsz"] = 256
    del doc["job"]["target"]
    doc["format"] = "adaptdl"
    path.write_text(json.dumps(doc, indent=2))
    with pytest.raises(ProfileError, match=r"field 'format'"):
        read_cpu_profile(out)


def test_empty_root(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="no <type>/profile.json"):
        load_cpu_profiles(tmp_path)
