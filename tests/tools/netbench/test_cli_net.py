"""The network commands' errors: clear, naming what to do, exit 2."""

from __future__ import annotations

import pytest

from coadapt.backends.live import nodes
from coadapt.cli import main


def test_refit_without_a_run_says_what_to_run(tmp_path, capsys):
    assert main(["netbench", "--refit", "--out", str(tmp_path)]) == 2
    assert "run 'coadapt netbench --out" in capsys.readouterr().err


def test_refit_of_a_wrong_file_names_the_column(tmp_path, capsys):
    (tmp_path / "netbench.csv").write_text("a,b\n1,2\n")
    assert main(["netbench", "--refit", "--out", str(tmp_path)]) == 2
    assert "column 'bandwidth_gbps' missing" in capsys.readouterr().err


@pytest.mark.parametrize("arg", [["--bandwidth", "fast"], ["--bandwidth", "-1"], ["--k", "1,2"]])
def test_bad_netbench_options_are_refused(arg, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["netbench", *arg])
    assert exc.value.code == 2


def test_without_the_capability_netbench_and_live_say_what_is_missing(tmp_path, capsys,
                                                                       monkeypatch):
    monkeypatch.setattr(nodes, "missing_capability", lambda: "this process lacks CAP_NET_ADMIN")
    assert main(["netbench", "--out", str(tmp_path)]) == 2
    assert "lacks CAP_NET_ADMIN" in capsys.readouterr().err
    assert main(["live", "--cluster", "2x1", "--network", "emulated", "--workload",
                 "live-net-a", "--out", str(tmp_path / "l"), "--calibration", "profiles"]) == 2
    err = capsys.readouterr().err
    assert "lacks CAP_NET_ADMIN" in err
    assert not (tmp_path / "l").exists()  # refused before anything was written


def test_a_bad_net_calibration_fails_the_simulation_naming_the_file(tmp_path, capsys):
    bad = tmp_path / "network.json"
    bad.write_text('{"kind": "network-calibration", "format": 1, "fits": [{}]}')
    code = main(["simulate", "--workload", "live-net-a", "--cluster", "2x1", "--policy", "fixed",
                 "--net-calibration", str(bad), "--out", str(tmp_path / "s")])
    assert code == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "fits[0] field 'bandwidth_gbps'" in err


def test_cleanup_reports_what_it_killed(capsys):
    assert main(["net", "cleanup"]) == 0
    assert "namespace holder(s)" in capsys.readouterr().out
