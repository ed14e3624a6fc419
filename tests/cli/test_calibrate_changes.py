"""What ``coadapt calibrate`` prints after measuring, without measuring."""

import json
from pathlib import Path

from coadapt.cli.calibrate import changes_report
from coadapt.world.costs import CALIBRATIONS_DIR

SHIPPED = Path(__file__).resolve().parents[2] / "profiles" / "live-costs.json"


def test_the_report_compares_with_the_previous_and_says_how_to_use_it(tmp_path):
    doc = json.loads(SHIPPED.read_text())
    doc["types"]["mlp-mnist1d"]["verify"] *= 2
    out = tmp_path / "new.json"
    out.write_text(json.dumps(doc))
    before = ("the reference calibration (profiles/live-costs.json, 2026-12-03 07:36)",
              json.loads(SHIPPED.read_text()))
    text = changes_report(before, out)
    lines = text.splitlines()
    assert lines[0] == ("changes against the reference calibration (profiles/live-costs.json, "
                        "2026-12-03 07:36):")
    row = next(line for line in lines if "mlp-mnist1d" in line and "verification" in line)
    assert row.split()[-1] == "2.00"
    assert next(line for line in lines if "cnn-mnist1d" in line and "start K1" in line
                ).split()[-1] == "1.00"
    assert lines[-1] == f"use it with --calibration {out}"


def test_a_first_calibration_in_the_calibrations_folder_is_used_with_this(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = CALIBRATIONS_DIR / "abc.json"
    out.parent.mkdir(parents=True)
    out.write_text(SHIPPED.read_text())
    assert changes_report(None, out) == "use it with --calibration this"
