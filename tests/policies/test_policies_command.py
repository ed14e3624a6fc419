"""``coadapt policies``: every policy with its role, source and options; a
file's policy on request; a bad spec is exit 2 with its reason."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from pluginkit import clean_registry, good_policy, write  # noqa: F401 (a fixture)

from coadapt.cli import main
from coadapt.cli.policies import EPILOG

pytestmark = pytest.mark.usefixtures("clean_registry")
ROOT = Path(__file__).resolve().parents[2]


def test_every_policy_is_listed_with_its_role_source_and_options(capsys):
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    assert "pollux  [primary]  coadapt.policies.pollux" in out
    assert "optimus-oracle  [primary, oracle]" in out
    assert "gavel-ftf-oracle  [variant, oracle]" in out
    assert "pollux-fair  [variant]" in out and "pollux with fairness=1.0; options as pollux's" in out
    assert "Pollux (Qiao et al., OSDI 2021)" in out  # the module's first docstring line
    assert re.search(r"\n      adapt_batch +bool += true +choose each job's batch size", out)
    assert out.index("tiresias  [primary]") < out.index("gavel-ftf-oracle")  # primaries first


def test_a_file_policy_is_listed_on_request(tmp_path, capsys):
    path = good_policy(tmp_path)
    assert main(["policies", "--policy", f"{path}:Good,fixed"]) == 0
    out = capsys.readouterr().out
    assert f"good-one  [plugin]  {path}" in out and "fixed  [primary]" in out
    assert "Everyone at its request" in out
    assert re.search(r"\n      limit +int +\= 0 +most slots per job \(0: its request\)\n", out)
    assert re.search(r"mode +\{fifo,lifo\} += fifo\n", out)
    assert re.search(r"label +str \| None += none\n", out)
    assert "pollux" not in out


def test_a_bad_spec_fails_with_exit_2_and_its_reason(tmp_path, capsys):
    path = write(tmp_path, "x.py", "class Bar:\n    pass\n\nclass Baz:\n    pass\n")
    assert main(["policies", "--policy", f"{path}:Foo"]) == 2
    err = capsys.readouterr().err
    assert f"coadapt policies: error: --policy {path}:Foo: {path} has no class Foo (it defines: " \
           "Bar, Baz)" in err


def test_the_epilog_examples_run_from_the_project_root(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    lines = [ln.split("#")[0].strip() for ln in EPILOG.splitlines()[1:] if ln.strip()]
    assert len(lines) == 3
    for line in lines:
        argv = shlex.split(line)
        assert argv[0] == "coadapt"
        assert main(argv[1:]) == 0, line
    assert "shortest-first  [plugin]" in capsys.readouterr().out
