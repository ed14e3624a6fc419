"""coadapt calibrate with real worker groups (one job type, short phases)."""

import os

import pytest

from coadapt.cli import main
from coadapt.world.costs import LiveCosts

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")


def test_calibration_measures_every_cost(tmp_path, capsys):
    out = tmp_path / "live-costs.json"
    code = main(["calibrate", "--types", "mlp-mnist1d", "--phase", "1", "--pair", "1",
                 "--out", str(out)])
    assert code == 0
    assert "wrote" in capsys.readouterr().out
    costs = LiveCosts.load(out)
    t = costs.types["mlp-mnist1d"]
    assert set(t.start) == set(t.restart) == {1, 2} and set(t.eval) == {1, 2}
    for v in [*t.start.values(), *t.restart.values(), t.verify]:
        assert 0.3 < v < 30  # processes really started: seconds, not zero
    assert all(0 <= v < 5 for v in t.eval.values())
    assert {(p.workers, p.micro) for p in t.steps} == {(1, 32), (2, 32), (1, 64), (2, 64)}
    assert all(p.step > p.sync >= 0 and p.samples > 0 for p in t.steps)
    assert 0.5 < t.colocation["mlp-mnist1d"] < 2.0
    assert costs.meta["samples"]["types"]["mlp-mnist1d"]["verify"]


def test_unknown_type_exits_2(capsys):
    assert main(["calibrate", "--types", "nope"]) == 2
    assert "unknown job type nope" in capsys.readouterr().err
