"""Policies from outside the package: files, modules, entry points, and every
way loading one can fail, each with its message."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pluginkit import clean_registry, good_policy, write  # noqa: F401 (a fixture)

from coadapt.policies import REGISTRY, PolicyConfig, make_policy, policy_names, resolve_policies
from coadapt.policies.plugins import (
    load_entry_points,
    plugin_specs,
    plugin_stamp,
    resolve,
)

pytestmark = pytest.mark.usefixtures("clean_registry")
CFG = PolicyConfig()


def test_a_file_spec_registers_the_class_under_its_name(tmp_path, monkeypatch):
    path = good_policy(tmp_path)
    assert resolve(f"{path}:Good") == "good-one"
    entry = REGISTRY["good-one"]
    assert (entry.role, entry.source, entry.spec) == ("plugin", str(path), f"{path}:Good")
    monkeypatch.chdir(tmp_path)
    assert resolve("good.py:Good") == "good-one"  # the same file, relative: loaded once
    policy = make_policy("./good.py:Good", CFG)
    assert policy.name == "good-one" and policy.decide(None) == {}
    assert make_policy("good-one", CFG).options.limit == 0
    assert plugin_specs(["fixed", "good-one"]) == (f"{path}:Good",)
    assert "good-one" in policy_names(plugins=True) and "good-one" not in policy_names(
        variants=True)
    assert resolve_policies(["all", "good.py:Good", "fixed"]) == [*policy_names(), "good-one"]


def test_a_worker_loads_the_configs_plugins_before_it_builds(tmp_path):
    path = good_policy(tmp_path)
    with pytest.raises(KeyError, match="unknown policy 'good-one'"):
        make_policy("good-one", CFG)  # a fresh process: nothing loaded yet
    policy = make_policy("good-one", PolicyConfig(plugins=(f"{path}:Good",)))
    assert policy.name == "good-one"


def test_a_module_spec_imports_from_the_path(tmp_path, monkeypatch):
    good_policy(tmp_path / "mypolicies", filename="fast.py", name="fast-one")
    (tmp_path / "mypolicies" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert resolve("mypolicies.fast:Good") == "fast-one"
    assert REGISTRY["fast-one"].source.startswith("mypolicies.fast (")
    with pytest.raises(ValueError, match=r"--policy nothere\.mod:X: no module named 'nothere' "
                       r"\(is it installed"):
        resolve("nothere.mod:X")


def test_an_edited_plugin_changes_its_stamp(tmp_path):
    path = good_policy(tmp_path)
    before = plugin_stamp([resolve(f"{path}:Good"), "pollux"])
    assert set(before) == {"good-one"}
    path.write_text(path.read_text() + "\n# edited\n")
    assert plugin_stamp(["good-one"]) != before


def _dist(root: Path, dist: str, entries: dict[str, str]) -> None:
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entries.items())
    (info / "entry_points.txt").write_text(f"[coadapt.policies]\n{lines}\n")


def test_entry_points_load_lazily_by_name_and_a_broken_one_is_named(tmp_path, monkeypatch):
    good_policy(tmp_path, filename="epmod.py", name="ep-one")
    write(tmp_path, "epbroken.py", "raise RuntimeError('boom')\n")
    _dist(tmp_path, "my_policies", {"ep-one": "epmod:Good", "ep-broken": "epbroken:Good",
                                    "ep-misnamed": "epmod:Good"})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "epmod" not in sys.modules and "ep-one" not in REGISTRY  # nothing read at import
    assert make_policy("ep-one", CFG).name == "ep-one"
    assert REGISTRY["ep-one"].source == "entry point ep-one (my_policies 0.1)"
    broken = load_entry_points()
    assert set(broken) == {"ep-broken", "ep-misnamed"}
    assert "epbroken.py, line 1: RuntimeError: boom" in broken["ep-broken"]
    assert "the entry point must carry the policy's name" in broken["ep-misnamed"]
    with pytest.raises(ValueError, match="entry point ep-broken .*RuntimeError: boom"):
        resolve("ep-broken")


def test_entry_points_read_through_importlib_metadata(tmp_path, monkeypatch):
    from importlib.metadata import EntryPoint

    good_policy(tmp_path, filename="epmod2.py", name="ep-two")
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = []

    def fake(group: str):
        calls.append(group)
        return [EntryPoint("ep-two", "epmod2:Good", group)]
    monkeypatch.setattr("importlib.metadata.entry_points", fake)
    resolve("fixed")
    assert calls == []  # a known name never reads them
    assert resolve("ep-two") == "ep-two" and calls == ["coadapt.policies"]
    assert "unknown distribution" in REGISTRY["ep-two"].source


def test_an_unknown_name_says_the_nearest_and_how_to_give_a_file():
    with pytest.raises(ValueError, match=r"unknown policy 'polux' \(did you mean 'pollux'\?\); "
                       r"known: .*file 'path/to/file.py:Class'"):
        resolve("polux")
    with pytest.raises(ValueError, match="--policy: no policy given"):
        resolve_policies([])


def test_a_missing_file_or_class_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"--policy /nope/x.py:Foo: /nope/x.py: no such file"):
        resolve("/nope/x.py:Foo")
    with pytest.raises(ValueError, match=r"is not a file"):
        resolve(f"{tmp_path}/:Foo")
    path = good_policy(tmp_path)
    with pytest.raises(ValueError) as err:
        resolve(f"{path}:Goood")
    assert str(err.value) == (f"--policy {path}:Goood: {path} has no class Goood (it defines: "
                              "Bar, Good); did you mean Good?")
    for bad in ("x.py:", "x.py:1abc", "not a module:X"):
        with pytest.raises(ValueError, match=f"--policy {bad}: .*package.module:Class"):
            resolve(bad)


@pytest.mark.parametrize("source, message", [
    ("x = 1\ny = 1 / 0\n", r"bad.py, line 2: ZeroDivisionError: division by zero$"),
    ("import nonexistent_mod_xyz\n", r"bad.py, line 1: ModuleNotFoundError: No module named "
     "'nonexistent_mod_xyz'"),
    ("def f(:\n", r"bad.py, line 1: SyntaxError"),
    ("import json\njson.loads('{')\n", r"bad.py, line 2: JSONDecodeError: .* \(raised in "
     r".*json.*line \d+\)"),
])
def test_an_import_error_names_the_files_line(tmp_path, source, message):
    path = write(tmp_path, "bad.py", source)
    with pytest.raises(ValueError, match=f"--policy {path}:P: importing .*{message}"):
        resolve(f"{path}:P")
    assert not any(m.startswith("coadapt_plugin_bad_") for m in sys.modules)


@pytest.mark.parametrize("body, message", [
    ("class P:\n    name = 'p'\n    uses_oracle = False\n", "lacks decide"),
    ("class P:\n    uses_oracle = False\n    def decide(self, s): return {}\n", "lacks name"),
    ("class P:\n    name = 'p'\n    def decide(self, s): return {}\n", "lacks uses_oracle"),
    ("class P:\n    name = 'pollux'\n    uses_oracle = False\n    def __init__(self, c): pass\n"
     "    def decide(self, s): return {}\n",
     "its name 'pollux' is taken by the built-in policy pollux .coadapt.policies.pollux."),
    ("class P:\n    name = 'a/b'\n    uses_oracle = False\n    def decide(self, s): return {}\n",
     "a policy's name is letters"),
    ("class P:\n    name = 'all'\n    uses_oracle = False\n    def decide(self, s): return {}\n",
     "not 'all'"),
    ("class P:\n    name = 'peek'\n    uses_oracle = True\n    def decide(self, s): return {}\n",
     "reads the truth .* put 'oracle' in it"),
    ("class P:\n    name = 'p'\n    uses_oracle = 'no'\n    def decide(self, s): return {}\n",
     "uses_oracle must be True or False"),
    ("class P:\n    name = 'p'\n    uses_oracle = False\n    decide = 3\n", "decide must be a method"),
    ("class P:\n    name = 'p'\n    uses_oracle = False\n    def __init__(self, c, d): pass\n"
     "    def decide(self, s): return {}\n", r"must be built as P\(config\)"),
    ("from dataclasses import dataclass\nclass P:\n    name = 'p'\n    uses_oracle = False\n"
     "    @dataclass(frozen=True)\n    class Options:\n        k: int\n"
     "    def __init__(self, c): pass\n    def decide(self, s): return {}\n",
     r"P.Options.k: an option needs a default"),
    ("from dataclasses import dataclass\nclass P:\n    name = 'p'\n    uses_oracle = False\n"
     "    @dataclass(frozen=True)\n    class Options:\n        k: list = None\n"
     "    def __init__(self, c): pass\n    def decide(self, s): return {}\n",
     r"P.Options.k: type list is not supported"),
    ("class P:\n    name = 'p'\n    uses_oracle = False\n    Options = int\n"
     "    def __init__(self, c): pass\n    def decide(self, s): return {}\n", "must be a dataclass"),
])
def test_a_class_that_is_not_a_policy_is_refused(tmp_path, body, message):
    path = write(tmp_path, "p.py", body)
    with pytest.raises(ValueError, match=f"--policy {path}:P: .*{message}"):
        resolve(f"{path}:P")
    assert all(e.role != "plugin" for e in REGISTRY.values())


def test_two_plugins_may_not_share_a_name(tmp_path):
    first = good_policy(tmp_path / "a")
    second = good_policy(tmp_path / "b")
    resolve(f"{first}:Good")
    with pytest.raises(ValueError, match=f"its name 'good-one' is taken by the plugin good-one "
                       f"\\({first}\\)"):
        resolve(f"{second}:Good")
