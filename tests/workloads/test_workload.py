import pytest

from coadapt.world.workload import WorkloadError, load_workload


def write(tmp_path, text):
    p = tmp_path / "w.csv"
    p.write_text(text)
    return str(p)


def test_loads_and_sorts(tmp_path):
    w = load_workload(write(tmp_path, "name,time,application,num_replicas,batch_size\n"
                                      "b,20,toy,2,64\na,10,toy,1,32\n"), {"toy"})
    assert [j.name for j in w.jobs] == ["a", "b"] and w.jobs[1].num_replicas == 2


@pytest.mark.parametrize("row,msg", [
    ("a,ten,toy,1,32", r"w.csv:2: field 'time' is 'ten'"),
    ("a,10,toy,0,32", r"w.csv:2: field 'num_replicas' is 0, must be >= 1"),
    ("a,10,toy,1.5,32", r"w.csv:2: field 'num_replicas' is '1.5', expected int"),
    ("a,10,gpt,1,32", r"w.csv:2: field 'application' is 'gpt', no profile"),
    (",10,toy,1,32", r"w.csv:2: field 'name' is empty"),
])
def test_bad_rows_name_file_line_and_field(tmp_path, row, msg):
    path = write(tmp_path, "name,time,application,num_replicas,batch_size\n" + row + "\n")
    with pytest.raises(WorkloadError, match=msg):
        load_workload(path, {"toy"})


def test_missing_column_and_missing_file(tmp_path):
    with pytest.raises(WorkloadError, match="w.csv:1: missing column"):
        load_workload(write(tmp_path, "name,time\n"), {"toy"})
    with pytest.raises(WorkloadError, match="no such workload"):
        load_workload(str(tmp_path / "nope.csv"))


def test_optional_weight_column(tmp_path):
    w = load_workload(write(tmp_path, "name,time,application,num_replicas,batch_size,weight\n"
                                      "a,10,toy,1,32,4\nb,20,toy,1,32,\n"), {"toy"})
    assert [j.weight for j in w.jobs] == [4.0, 1.0]  # an empty cell is the default weight
    w = load_workload(write(tmp_path, "name,time,application,num_replicas,batch_size\n"
                                      "a,10,toy,1,32\n"), {"toy"})
    assert w.jobs[0].weight == 1.0


@pytest.mark.parametrize("cell,msg", [
    ("0", r"w.csv:3: field 'weight' is 0, must be a number > 0"),
    ("-2", r"w.csv:3: field 'weight' is -2"),
    ("inf", r"w.csv:3: field 'weight' is inf"),
    ("heavy", r"w.csv:3: field 'weight' is 'heavy'"),
])
def test_bad_weight_names_line_and_field(tmp_path, cell, msg):
    path = write(tmp_path, "name,time,application,num_replicas,batch_size,weight\n"
                           f"a,10,toy,1,32,1\nb,20,toy,1,32,{cell}\n")
    with pytest.raises(WorkloadError, match=msg):
        load_workload(path, {"toy"})
