"""Which calibration a run charged: chosen by name, quiet for the shipped
reference, named in table headers and log headers, and what a new one changed."""

import dataclasses
import json
import logging
from pathlib import Path

import pytest
from toyprofile import make_toy

from coadapt.eventlog import read_events
from coadapt.runs.settings import RunSettings
from coadapt.runs.simulate import simulate_policy
from coadapt.world.calibration import Change, calibration_changes, format_changes
from coadapt.world.cluster import ClusterSpec
from coadapt.world.costs import (
    CostError,
    LiveCosts,
    TypeCosts,
    calibration_line,
    calibration_provenance,
    machine_fingerprint,
    previous_calibration,
    resolve_costs,
)
from coadapt.world.workload import JobSpec, Workload
from coadapt.world.world import World

PROFILES = str(Path(__file__).resolve().parents[2] / "profiles")
SHIPPED = Path(PROFILES) / "live-costs.json"


def _copy(path: Path, date: str, machine: dict | None) -> Path:
    """The shipped calibration, re-dated and re-attributed to ``machine``."""
    doc = json.loads(SHIPPED.read_text())
    doc["meta"] = {**doc["meta"], "date": date, "source": str(path)}
    doc["meta"].pop("machine")
    if machine is not None:
        doc["meta"]["machine"] = machine
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_the_shipped_reference_is_named_and_quiet(caplog, tmp_path):
    with caplog.at_level(logging.DEBUG, logger="coadapt"):
        costs = resolve_costs("reference", PROFILES, root=tmp_path)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert costs is not None and costs.is_reference() and not costs.is_this_machine()
    prov = calibration_provenance(costs)
    assert prov == {"file": str(SHIPPED), "machine": "reference machine (host vm, 2 cores)",
                    "date": "2026-12-03T07:36:11+00:00", "reference": True,
                    "this_machine": False, "choice": "reference"}
    line = calibration_line(costs)
    assert line.startswith("calibration: reference machine (host vm, 2 cores; ")
    assert f"{SHIPPED}, 2026-12-03), not this one" in line and "coadapt calibrate --quick" in line
    alias = resolve_costs("profiles", PROFILES, root=tmp_path)
    assert alias is not None and alias.path == costs.path and alias.choice == "profiles"


def test_this_without_a_calibration_says_to_run_calibrate(tmp_path):
    with pytest.raises(CostError, match=r"coadapt calibrate --quick") as err:
        resolve_costs("this", PROFILES, root=tmp_path / "none-here")
    assert str(tmp_path / "none-here") in str(err.value)


def test_this_and_auto_pick_this_machines_newest(tmp_path):
    me = machine_fingerprint()
    _copy(tmp_path / "old.json", "2026-12-01T10:00:00+00:00", me)
    new = _copy(tmp_path / "new.json", "2026-12-05T18:30:12+00:00", me)
    _copy(tmp_path / "other.json", "2026-12-09T00:00:00+00:00", {**me, "id": "elsewhere"})
    costs = resolve_costs("this", PROFILES, root=tmp_path)
    assert costs is not None and costs.path == str(new) and costs.is_this_machine()
    assert calibration_line(costs) == f"calibration: this machine ({new}, 2026-12-05 18:30)"
    prov = calibration_provenance(costs)
    assert prov is not None and prov["this_machine"] and not prov["reference"]
    assert prov["choice"] == "this" and prov["file"] == str(new)
    auto = resolve_costs("auto", PROFILES, root=tmp_path)
    assert auto is not None and auto.path == str(new) and auto.choice == "auto"
    fallback = resolve_costs("auto", PROFILES, root=tmp_path / "empty")
    assert fallback is not None and fallback.is_reference()


def test_another_machines_file_is_logged_at_info_and_recorded(caplog, tmp_path):
    path = _copy(tmp_path / "theirs.json", "2026-11-30T08:05:00+00:00",
                 {"id": "abc", "cpu_model": "Some CPU", "cores": 16})
    with caplog.at_level(logging.DEBUG, logger="coadapt"):
        costs = resolve_costs(str(path), PROFILES, root=tmp_path / "empty")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r for r in caplog.records if r.levelno == logging.INFO and str(path) in r.getMessage()]
    prov = calibration_provenance(costs)
    assert prov == {"file": str(path), "machine": "Some CPU, 16 cores",
                    "date": "2026-11-30T08:05:00+00:00", "reference": False,
                    "this_machine": False, "choice": str(path)}
    assert calibration_line(costs).startswith(
        f"calibration: another machine (Some CPU, 16 cores; {path}, 2026-11-30 08:05), not this one")


def test_none_and_a_folder_without_a_calibration(tmp_path):
    assert resolve_costs("none", PROFILES) is None
    assert resolve_costs("reference", str(tmp_path)) is None
    assert calibration_provenance(None) is None
    assert calibration_line(None) == "calibration: none (a fixed restart delay)"


def test_scaling_keeps_where_the_costs_came_from(tmp_path):
    costs = resolve_costs("reference", PROFILES, root=tmp_path)
    assert costs is not None
    scaled = costs.scaled(1.5)
    assert (scaled.path, scaled.choice, scaled.is_reference()) == (costs.path, "reference", True)


def test_the_simulation_log_header_records_the_calibration(tmp_path):
    costs = LiveCosts({"toy": TypeCosts({1: 2.0}, {1: 4.0}, {1: 0.5}, 1.5)},
                      {"source": "cal.json", "date": "2026-12-03T07:36:11+00:00",
                       "machine": {"id": "reference", "name": "reference machine", "host": "vm",
                                   "cores": 2, "reference": True}},
                      path="cal.json", choice="reference")
    settings = RunSettings(ClusterSpec.parse("1x2"), interval=60.0, restart_delay=30.0,
                           show_progress=False)
    world = World.build({"toy": make_toy()}, settings.cluster, costs=costs)
    wl = Workload("t", tmp_path / "w.csv", (JobSpec("j", 0.0, "toy", 1, 32),))
    simulate_policy(world, wl, "fixed", settings, tmp_path / "run")
    header = next(iter(read_events(tmp_path / "run" / "events.jsonl")))
    assert header["live_costs"] == "cal.json"
    assert header["calibration"] == {"file": "cal.json", "machine": "reference machine (host vm, 2 cores)",
                                     "date": "2026-12-03T07:36:11+00:00", "reference": True,
                                     "this_machine": False, "choice": "reference"}


def _doc(start: dict, verify: float, colocation: dict | None = None, factor: float = 1.0) -> dict:
    t = {"start": start, "restart": {"1": 3.0}, "eval": {"1": 0.5}, "verify": verify,
         "compute_factor": factor}
    if colocation is not None:
        t["colocation"] = colocation
    return {"types": {"mlp": t}}


def test_the_changes_of_a_new_calibration_per_type_and_quantity():
    old = _doc({"1": 2.0, "2": 3.0}, 1.0, {"mlp": 1.2, "cnn": 1.4})
    new = _doc({"1": 3.0}, 1.5, factor=1.1)
    new["types"]["cnn"] = {"start": {"1": 1.0}, "restart": {"1": 1.0}, "eval": {"1": 0.1},
                           "verify": 2.0}
    changes = {(c.app, c.quantity): c for c in calibration_changes(old, new)}
    assert changes[("mlp", "start K1")] == Change("mlp", "start K1", 2.0, 3.0)
    assert changes[("mlp", "start K1")].ratio == pytest.approx(1.5)
    assert changes[("mlp", "start K2")].new is None and changes[("mlp", "start K2")].ratio is None
    assert changes[("mlp", "verification")].ratio == pytest.approx(1.5)
    assert changes[("mlp", "co-location")].old == pytest.approx(1.3)  # the mean of the pairs
    assert changes[("mlp", "co-location")].new is None
    assert changes[("mlp", "compute factor")].ratio == pytest.approx(1.1)
    assert changes[("mlp", "validation K1")].ratio == pytest.approx(1.0)
    assert changes[("cnn", "verification")] == Change("cnn", "verification", None, 2.0)
    assert ("cnn", "co-location") not in changes  # measured in neither
    text = format_changes(list(changes.values()), "the reference calibration (x.json)")
    lines = text.splitlines()
    assert lines[0] == "changes against the reference calibration (x.json):"
    row = next(line for line in lines if "mlp" in line and "start K1" in line)
    assert row.split()[-5:] == ["s", "->", "3.00", "s", "1.50"] and "2.00 s" in row
    assert "(not measured now)" in next(line for line in lines if "start K2" in line)
    assert "(new)" in next(line for line in lines if "cnn" in line and "verification" in line)
    gone = format_changes(calibration_changes(old, {"types": {}}), "x").splitlines()
    assert gone[2:] == ["  mlp                not measured now (kept in the previous)"]
    assert "x1.100" in next(line for line in lines if "mlp" in line and "compute factor" in line)
    assert "(new)" in next(line for line in lines if "cnn" in line and "compute factor" in line)


def test_the_previous_calibration_is_this_machines_else_the_reference(tmp_path):
    label, doc = previous_calibration(PROFILES, root=tmp_path)
    assert label == f"the reference calibration ({SHIPPED}, 2026-12-03 07:36)"
    assert "mlp-mnist1d" in doc["types"]
    mine = _copy(tmp_path / "mine.json", "2026-12-05T18:30:00+00:00", machine_fingerprint())
    label, _ = previous_calibration(PROFILES, root=tmp_path)
    assert label == f"this machine's previous calibration ({mine}, 2026-12-05 18:30)"
    assert previous_calibration(str(tmp_path / "nothing"), root=tmp_path / "empty") is None


def test_costs_built_in_memory_name_their_source():
    costs = dataclasses.replace(
        LiveCosts({"toy": TypeCosts({1: 1.0}, {1: 1.0}, {1: 0.0}, 1.0)},
                  {"source": "out/live/calibration.json", "machine": machine_fingerprint(),
                   "date": "2026-12-05T09:01:00+00:00"}), choice="measure")
    prov = calibration_provenance(costs)
    assert prov is not None and prov["file"] == "out/live/calibration.json"
    assert prov["this_machine"] and prov["choice"] == "measure"
    assert calibration_line(costs) == ("calibration: this machine (out/live/calibration.json, "
                                       "2026-12-05 09:01)")
