"""The Philly trace as a workload: every row kept at its arrival, typed by its
GPU-time class; bad rows named by file, line and field; the peak demand."""

from __future__ import annotations

import numpy as np
import pytest

from coadapt.cli import main
from coadapt.workloads.philly import peak_demand, read_trace, select

TRACE = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-01 00:00:10,100.0,1,100.0,a
2017-10-01 00:00:00,7200.0,4,28800.0,a
2017-10-02 00:00:00,36000.0,16,576000.0,b
2017-10-03 12:00:00,60.0,2,120.0,b

"""


def test_every_row_is_kept_at_its_arrival_and_classed_by_gpu_time(tmp_path):
    path = tmp_path / "philly.csv"
    path.write_text(TRACE)
    jobs = read_trace(path)
    assert [j.arrival for j in jobs] == [0.0, 10.0, 86400.0, 216000.0]
    assert [j.size_class for j in jobs] == ["medium", "small", "xlarge", "small"]
    assert peak_demand(jobs) == 16  # day 1 held 4 + 1 at most; day 2 the 16-GPU job alone
    day = select(jobs, (1.0, 2.0), None, np.random.default_rng(1))
    assert [j.arrival for j in day] == [0.0]  # re-based to the window's first arrival
    assert len(select(jobs, None, 2, np.random.default_rng(1))) == 2


@pytest.mark.parametrize("row,message", [
    ("2017-10-01 00:00:00,nan,1,1.0,a", "philly.csv:3: field 'duration' is 'nan'"),
    ("2017-10-01 00:00:00,10,0,1.0,a", "philly.csv:3: field 'num_gpus' is '0'"),
    ("yesterday,10,1,1.0,a", "philly.csv:3: field 'timestamp' is 'yesterday'"),
])
def test_a_bad_row_is_named(tmp_path, row, message):
    path = tmp_path / "philly.csv"
    path.write_text(TRACE.splitlines()[0] + "\n" + TRACE.splitlines()[1] + "\n" + row + "\n")
    with pytest.raises(ValueError, match=message):
        read_trace(path)


def test_the_command_writes_the_trace_as_a_workload(tmp_path, capsys):
    path = tmp_path / "philly.csv"
    path.write_text(TRACE)
    out = tmp_path / "w.csv"
    assert main(["workload", "philly", "--trace", str(path), "--cluster", "4x4",
                 "--out", str(out)]) == 0
    assert "wrote 4 jobs over 2.5 days" in capsys.readouterr().out
    lines = out.read_text().splitlines()
    assert lines[0] == "name,time,application,num_replicas,batch_size" and len(lines) == 5
    assert [int(x.split(",")[1]) for x in lines[1:]] == [0, 10, 86400, 216000]
    assert main(["workload", "philly", "--trace", str(path), "--window", "3:1",
                 "--out", str(out)]) == 2
    assert "--window '3:1'" in capsys.readouterr().err
