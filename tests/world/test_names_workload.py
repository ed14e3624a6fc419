"""One rule for job names, checked where a workload is read: one safe path
component, since a live run makes OUT/jobs/NAME of it."""

from __future__ import annotations

import pytest

from coadapt.util.paths import NAME_MAX, name_problem
from coadapt.world.workload import WorkloadError, load_workload

HEADER = "name,time,application,num_replicas,batch_size"


@pytest.mark.parametrize("name,msg", [
    ("../../../x", r"field 'name' is '../../../x', with '/'"),
    ("/tmp/x", r"field 'name' is '/tmp/x', with '/'"),
    ("..", r"field 'name' is '..'; a name is letters"),
    (".", r"field 'name' is '.'; a name is letters"),
    ("a b", r"field 'name' is 'a b', with ' '"),
    ("j\u00e9", r"field 'name' is 'j\u00e9', with '\u00e9'"),
    ("a\\b", r"field 'name' is .*, with"),
    ("x" * (NAME_MAX + 1), rf"field 'name' has {NAME_MAX + 1} characters; at most {NAME_MAX}"),
])
def test_unsafe_names_are_refused_with_file_line_and_field(tmp_path, name, msg):
    p = tmp_path / "w.csv"
    p.write_text(f"{HEADER}\nok,0,toy,1,32\n{name},0,toy,1,32\n", encoding="utf-8")
    with pytest.raises(WorkloadError, match=rf"w.csv:3: {msg}"):
        load_workload(str(p), {"toy"})


def test_safe_names_load(tmp_path):
    names = ["a.b_c-1", "x" * NAME_MAX, "..a", "cifar10-0", "A9"]
    p = tmp_path / "w.csv"
    p.write_text(HEADER + "\n" + "".join(f"{n},0,toy,1,32\n" for n in names), encoding="utf-8")
    assert [j.name for j in load_workload(str(p), {"toy"}).jobs] == names


def test_name_problem_is_none_only_for_safe_components():
    assert name_problem("job-1.a_b") is None
    assert name_problem("") == "is empty"
    assert all(name_problem(n) for n in ("a/b", "..", ".", "a\0b", "a\nb", "~", "$x"))
