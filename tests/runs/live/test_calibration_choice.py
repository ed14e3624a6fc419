"""A live run's ``--calibration``: the reference is accepted by name, and the
one chosen is saved, named on stdout and remembered with its choice."""

import json
from pathlib import Path

import pytest

from coadapt.runs.live.workflow import CALIBRATION_FILE, _calibration, _given_calibration
from coadapt.world.costs import CostError
from coadapt.world.workload import JobSpec, Workload

PROFILES = str(Path(__file__).resolve().parents[3] / "profiles")
WORKLOAD = Workload("w", Path("w.csv"), (JobSpec("a", 0.0, "mlp-mnist1d", 1, 32),))


@pytest.mark.parametrize("choice", ["reference", "profiles"])
def test_the_reference_is_accepted_by_name(choice, tmp_path, capsys):
    spec = {"calibration": choice, "profiles": PROFILES}
    given = _given_calibration(spec, WORKLOAD)
    assert given is not None and given.is_reference() and given.choice == choice
    costs = _calibration(spec, tmp_path, WORKLOAD, None, given, resumed=False)
    assert costs is not None and costs.choice == choice
    saved = json.loads((tmp_path / CALIBRATION_FILE).read_text())
    assert saved["meta"]["machine"]["reference"] is True
    out = capsys.readouterr().out
    assert "calibration: reference machine (host vm, 2 cores; " in out and "not this one" in out


def test_the_reference_of_a_folder_without_one_is_refused(tmp_path):
    with pytest.raises(CostError, match=r"--calibration reference: .* has no live-costs.json"):
        _given_calibration({"calibration": "reference", "profiles": str(tmp_path)}, WORKLOAD)
    assert _given_calibration({"calibration": "measure", "profiles": PROFILES}, WORKLOAD) is None
