"""Bad input to a live run fails before anything starts, naming file, line and field."""

from pathlib import Path

import pytest

from coadapt.cli import main

HEADER = "name,time,application,num_replicas,batch_size\n"


def write(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "w.csv"
    path.write_text(HEADER + rows)
    return path


@pytest.mark.parametrize(("rows", "expect"), [
    ("a,0,mlp-mnist1d,1,32\nb,5,resnet,1,32\n", ":3: field 'application' is 'resnet'"),
    ("a,0,mlp-mnist1d,3,96\n", ":2: field 'num_replicas' is 3, more than the 2 workers"),
    ("a,0,mlp-mnist1d,1,32\nb,1,cnn-mnist1d,2,4\n", ":3: field 'batch_size' is 4"),
    ("a,0,transformer-text,1,256\n", ":2: field 'batch_size' is 256"),
])
def test_bad_rows_exit_2_and_start_nothing(tmp_path, capsys, rows, expect):
    wl = write(tmp_path, rows)
    out = tmp_path / "out"
    code = main(["live", "--workload", str(wl), "--out", str(out), "--no-status"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{wl}{expect}" in err
    assert not out.exists()


@pytest.mark.parametrize(("args", "expect"), [
    (["--cluster", "64x4"], "needs 256 cores"),
    (["--policy", "optimus-oracle"], "needs ground truth"),
])
def test_options_a_live_run_cannot_honour_exit_2(tmp_path, capsys, args, expect):
    wl = write(tmp_path, "a,0,mlp-mnist1d,1,32\n")
    code = main(["live", "--workload", str(wl), "--out", str(tmp_path / "out"), *args])
    assert code == 2
    assert expect in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_an_existing_run_is_not_overwritten(tmp_path, capsys):
    wl = write(tmp_path, "a,0,mlp-mnist1d,1,32\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "live.json").write_text("{}")
    code = main(["live", "--workload", str(wl), "--out", str(out)])
    assert code == 2
    assert "--resume" in capsys.readouterr().err


def test_resume_of_a_folder_without_a_run_exits_2(tmp_path, capsys):
    code = main(["live", "--out", str(tmp_path), "--resume"])
    assert code == 2
    assert "live.json: not found" in capsys.readouterr().err


def test_a_calibration_without_a_workload_type_exits_2_before_claiming_anything(tmp_path, capsys):
    import json as _json

    from coadapt.world.costs import LiveCosts

    shipped = LiveCosts.load(Path(__file__).resolve().parents[3] / "profiles" / "live-costs.json")
    doc = _json.loads((Path(__file__).resolve().parents[3] / "profiles" / "live-costs.json")
                      .read_text())
    doc["types"] = {"mlp-mnist1d": doc["types"]["mlp-mnist1d"]}
    cal = tmp_path / "cal.json"
    cal.write_text(_json.dumps(doc))
    assert "cnn-mnist1d" in shipped.types
    wl = write(tmp_path, "a,0,mlp-mnist1d,1,32\nb,0,cnn-mnist1d,1,32\n")
    code = main(["live", "--workload", str(wl), "--out", str(tmp_path / "out"),
                 "--calibration", str(cal), "--no-status"])
    err = capsys.readouterr().err
    assert code == 2 and "no costs for cnn-mnist1d" in err and str(cal) in err
    assert not (tmp_path / "out").exists()
    code = main(["simulate", "--workload", str(wl), "--calibration", str(cal),
                 "--out", str(tmp_path / "sim"), "--no-progress"])
    assert code == 2 and "no costs for cnn-mnist1d" in capsys.readouterr().err
