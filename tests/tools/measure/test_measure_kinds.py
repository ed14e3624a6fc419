"""Per-kind calibration: which runs, and the factors from steady steps."""

from __future__ import annotations

import polars as pl
import pytest

from coadapt.cli import main
from coadapt.tools.measure.kinds import (
    format_kinds,
    kind_cells,
    kind_factor,
    kind_runs,
    measured_kinds,
    needs_kinds,
)
from coadapt.world.cluster import ClusterSpec
from coadapt.world.kinds import KindFactor, KindSpeeds


class FakeProfile:
    """Compute 10 ms per sample-unit: 0.1 s at m=8, 0.4 s at m=32; sync 0.05 s at 2 workers."""

    name = "fake"

    def throughput(self, placement: tuple[int, ...], micro: float) -> tuple[float, float]:
        sync = 0.05 if sum(placement) > 1 else 0.0
        return micro / 80 + sync, sync


def _steps(rows: list[tuple[int, int, float, float]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["workers", "local_bsz", "step_time", "sync_time"],
                        orient="row")


def test_factors_are_measured_over_predicted_with_their_cv():
    rows = ([(1, 8, 0.3, 0.0)] * 5 + [(1, 32, 1.2, 0.0)] * 4 + [(1, 32, 1.32, 0.0)]
            + [(2, 8, 0.2, 0.1), (2, 8, 0.25, 0.15)])
    f = kind_factor(_steps(rows), FakeProfile())
    assert f.compute == pytest.approx(7.62 / 2.5)  # total measured over total predicted
    assert 0 < f.compute_cv < 0.05
    assert f.sync == pytest.approx(2.5) and f.sync_cv == pytest.approx(0.2)
    assert f.samples == 12
    only1 = kind_factor(_steps([(1, 8, 0.2, 0.0)]), FakeProfile())
    assert only1.sync == only1.compute == pytest.approx(2.0)
    with pytest.raises(ValueError, match="no 1-worker"):
        kind_factor(_steps([(2, 8, 0.2, 0.1)]), FakeProfile())


def test_a_quota_that_stalls_one_step_in_four_counts_at_its_long_run_rate():
    # Under a CPU quota most short steps run at full speed and every fourth
    # waits out the period: the median says 1x, the rate is 2.5x.
    rows = [(1, 8, 0.1, 0.0)] * 3 + [(1, 8, 0.7, 0.0)]
    rows = rows * 4
    assert kind_factor(_steps(rows), FakeProfile()).compute == pytest.approx(2.5)


def test_runs_cover_two_micro_batches_and_two_workers():
    cells = kind_cells("lstm-text")
    assert [(c.workers, c.micro) for c in cells] == [(1, 8), (1, 32), (2, 8)]
    cluster = ClusterSpec.parse("1x1:native,1x1:legacy,1x1:half")
    assert measured_kinds(cluster) == ["native", "legacy", "half"]
    assert measured_kinds(ClusterSpec.parse("1x1:legacy")) == ["native", "legacy"]
    assert not needs_kinds(ClusterSpec.parse("1x2")) and not needs_kinds(
        ClusterSpec.parse("1x1:native"))
    assert kind_runs(["lstm-text"], ["native", "legacy"]) == 6


def test_table_shows_factors_relative_to_native():
    speeds = KindSpeeds({"cnn": {"native": KindFactor(1.1, 1.0, 0.02, 0.1, 30),
                                 "legacy": KindFactor(3.3, 1.2, 0.05, 0.2, 30)}})
    text = format_kinds(speeds)
    assert "legacy" in text and "x3.00 / x1.20" in text and "5%" in text


def test_cli_refuses_unknown_kinds_and_kinds_without_quick(capsys):
    assert main(["calibrate", "--quick", "--cluster", "1x1:native,1x1:warp"]) == 2
    assert "unknown node kind 'warp'" in capsys.readouterr().err
    assert main(["calibrate", "--cluster", "1x1:legacy"]) == 2
    assert "add --quick" in capsys.readouterr().err
