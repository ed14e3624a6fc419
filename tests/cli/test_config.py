"""Spec files (``--config``): read through the command's own options, flags win,
and the written OUT/config.toml reads back to the same settings."""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

import pytest

from coadapt.cli import build_parser, main, subparser
from coadapt.cli.config import (
    ConfigError,
    SpecList,
    apply_config,
    load_config,
    read_config,
    spec_of,
    write_config,
)
from coadapt.runs.flags import apply_preset, given

COMMANDS = ("simulate", "experiment")
CANDIDATES = ("0.25", "3", "2", "1,10", "x-value")  # argument texts tried for a non-default value


def _sub(command: str) -> argparse.ArgumentParser:
    return subparser(build_parser([command]), command)


def _spec(tmp_path: Path, text: str, name: str = "run.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _resolved(command: str, path: Path | None, argv: list[str]) -> argparse.Namespace:
    """What main() does: parse, apply the spec to the command's parser, parse again."""
    parser = build_parser([command])
    if path is not None:
        apply_config(subparser(parser, command), path)
    return parser.parse_args([command, *argv])


def _visible(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.help != argparse.SUPPRESS and a.default != argparse.SUPPRESS
            and any(s.startswith("--") for s in a.option_strings) and a.dest != "config"]


def _long(action: argparse.Action) -> str:
    return next(s for s in action.option_strings if s.startswith("--"))


def _non_default_argv(parser: argparse.ArgumentParser) -> list[str]:
    """Every visible option of ``parser`` given a value other than its default,
    found from the action alone (so an option the CLI gains later is covered)."""
    argv: list[str] = []
    for action in _visible(parser):
        option = _long(action)
        if action.nargs == 0:
            argv.append(option)
            continue
        texts = [str(c) for c in action.choices] if action.choices else list(CANDIDATES)
        for text in texts:
            try:
                value = action.type(text) if callable(action.type) else text
            except (argparse.ArgumentTypeError, ValueError, TypeError):
                continue
            if value != action.default and [value] != action.default:
                argv += [option, text]
                break
        else:
            raise AssertionError(f"no non-default value found for {option}")
    return argv


def _settings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    done = apply_preset(args)
    return {a.dest: getattr(done, a.dest) for a in _visible(parser)}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("nondefault", [False, True])
def test_spec_round_trip_over_every_option_of_the_real_parser(tmp_path, command, nondefault):
    parser = _sub(command)
    argv = _non_default_argv(parser) if nondefault else []
    args = parser.parse_args(argv)
    path = tmp_path / "config.toml"
    write_config(path, args, parser)
    text = path.read_text()
    assert text.startswith("# ") and f"coadapt {command} --config {path}" in text.splitlines()[1]
    written = tomllib.loads(text)
    skip = {"no_progress", "resume", "force"}  # how a run is driven: not in a spec
    for action in _visible(parser):  # every option is there, unless None (its default)
        name = _long(action)[2:]
        if action.dest not in skip and getattr(apply_preset(args), action.dest) is not None:
            assert name in written, name
    again = _resolved(command, path, [])
    want, got = _settings(args, parser), _settings(again, parser)
    for dest in skip:
        want.pop(dest, None)
        got.pop(dest, None)
    assert got == want
    if nondefault:  # every value was typed, and each differs from the default
        defaults = _settings(parser.parse_args([]), parser)
        assert [d for d in want if want[d] == defaults[d]] == []
    # and writing the reread settings gives the same file
    path2 = tmp_path / "again.toml"
    write_config(path2, again, parser)
    assert tomllib.loads(path2.read_text()) == written


def test_spec_written_file_is_plain_toml_without_hidden_or_driving_options(tmp_path):
    parser = _sub("experiment")
    args = parser.parse_args(["--policies", "fixed,sia", "--jobs", "2", "--bandwidth", "1,10",
                              "--resume", "--no-progress"])
    path = tmp_path / "config.toml"
    write_config(path, args, parser)
    data = tomllib.loads(path.read_text())
    assert data["policy"] == ["fixed", "sia"] and data["parallel"] == 2
    assert data["bandwidth"] == [1.0, 10.0]
    for hidden in ("policies", "jobs", "live-costs", "resume", "no-progress", "config", "help"):
        assert hidden not in data
    assert "restart-delay" not in data  # None: the measured one, omitted
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]  # atomic, cleaned up


def test_spec_values_count_as_typed_and_flags_win(tmp_path):
    path = _spec(tmp_path, 'workload = "cpu-burst"\npolicy = ["fixed", "pollux"]\ncluster = "4x2"\n'
                 "interval = 20\nseed = 7\nno_plots = true\n")
    args = _resolved("simulate", path, [])
    assert (args.workload, args.policy, args.cluster, args.interval, args.seed, args.no_plots) == \
        ("cpu-burst", ["fixed", "pollux"], "4x2", 20.0, 7, True)
    assert given(args.cluster) and given(args.interval)  # a preset keeps them
    preset = apply_preset(_resolved("simulate", path, ["--preset", "osdi21"]))
    assert (preset.interval, preset.cluster, preset.restart_delay) == (20.0, "4x2", 30.0)
    flags = _resolved("simulate", path, ["--policy", "sia", "--interval", "30", "--seed", "2"])
    assert (flags.policy, flags.interval, flags.seed, flags.workload) == (["sia"], 30.0, 2, "cpu-burst")
    two = _resolved("simulate", path, ["--policy", "sia", "--policy", "gavel,fixed"])
    assert two.policy == ["sia", "gavel", "fixed"]  # the file's list replaced, then added to


def test_spec_preset_from_the_file_is_written_resolved(tmp_path):
    path = _spec(tmp_path, 'preset = "osdi21"\n')
    args = _resolved("simulate", path, [])
    out = tmp_path / "config.toml"
    write_config(out, args, _sub("simulate"))
    data = tomllib.loads(out.read_text())
    assert (data["preset"], data["interval"], data["new-jobs"], data["restart-delay"]) == \
        ("osdi21", 60.0, "one", 30.0)
    again = apply_preset(_resolved("simulate", out, []))
    assert (again.interval, again.tiresias_threshold) == (60.0, "57600")


def test_spec_list_or_comma_string_for_repeatable_and_comma_options(tmp_path):
    for text in ('policy = ["fixed", "pollux"]', 'policy = "fixed,pollux"', 'policies = "fixed,pollux"'):
        assert load_config(_spec(tmp_path, text + "\n"), _sub("experiment"))["policy"] == \
            ["fixed", "pollux"], text
    for text in ("bandwidth = [1, 10, 100]", 'bandwidth = "1,10,100"'):
        assert load_config(_spec(tmp_path, text + "\n"), _sub("experiment"))["bandwidth"] == \
            [1.0, 10.0, 100.0]
    spec = load_config(_spec(tmp_path, 'workloads = ["cpu-load4", "cpu-burst"]\n'
                             'policy-arg = ["pollux.p=-0.5", "x=1,2"]\n'), _sub("experiment"))
    assert spec == {"workloads": "cpu-load4,cpu-burst", "policy_arg": ["pollux.p=-0.5", "x=1,2"]}
    assert load_config(_spec(tmp_path, "policy = []\n"), _sub("experiment"))["policy"] == []


def test_spec_dashes_and_underscores_are_one_key(tmp_path):
    parser = _sub("simulate")
    a = load_config(_spec(tmp_path, "restart-delay = 3\nnew_jobs = \"one\"\n"), parser)
    b = load_config(_spec(tmp_path, "restart_delay = 3\nnew-jobs = \"one\"\n"), parser)
    assert a == b == {"restart_delay": 3.0, "new_jobs": "one"}
    with pytest.raises(ConfigError, match=r"run.toml:2: restart_delay: the same option as 'restart-delay'"):
        load_config(_spec(tmp_path, "restart-delay = 3\nrestart_delay = 4\n"), parser)


def test_spec_unknown_key_names_file_line_and_nearest(tmp_path):
    path = _spec(tmp_path, '# my run\nworkload = "philly-small"\npolcy = "fixed"\n')
    with pytest.raises(ConfigError) as err:
        load_config(path, _sub("simulate"))
    assert str(err.value) == f"{path}:3: polcy: unknown option; did you mean 'policy'?"
    assert (err.value.line, err.value.key) == (3, "polcy")
    with pytest.raises(ConfigError, match=r":1: zzzz: unknown option of 'coadapt simulate'"):
        load_config(_spec(tmp_path, "zzzz = 1\n"), _sub("simulate"))
    with pytest.raises(ConfigError, match=r":1: seeds: unknown option; did you mean 'seed'\?"):
        load_config(_spec(tmp_path, "seeds = 3\n"), _sub("simulate"))  # experiment's, not simulate's
    for key in ("config", "help"):
        with pytest.raises(ConfigError, match=rf":1: {key}: not for a spec file"):
            load_config(_spec(tmp_path, f'{key} = "x.toml"\n'), _sub("simulate"))


def test_spec_wrong_types_name_line_and_expectation(tmp_path):
    cases = {
        'interval = "fast"': 'interval: expected a number, got "fast"',
        "seed = 1.5": "seed: expected an integer, got 1.5",
        'seed = "2"': 'seed: expected an integer, got "2"',
        "no-plots = 1": "no-plots: expected true or false, got 1",
        "workload = true": "workload: expected a string, got true",
        "interval = -1": "interval: '-1': expected a finite number >= 0.001",
        'new-jobs = "all"': "new-jobs: invalid choice: 'all'",
        'preset = "osdi"': "preset: invalid choice: 'osdi'",
        "interval = [1, 2]": "interval: expected a number, got a list",
        "policy = [1, [2]]": "policy: expected a string, got [2]",
        "latency = nan": "latency: 'nan': expected a finite number",
    }
    for line, message in cases.items():
        path = _spec(tmp_path, f"# header\n\n{line}\n")
        with pytest.raises(ConfigError) as err:
            load_config(path, _sub("simulate"))
        assert str(err.value).startswith(f"{path}:3: {message}"), (line, str(err.value))


def test_spec_syntax_error_and_tables_and_unreadable(tmp_path):
    with pytest.raises(ConfigError, match=r"run.toml:2: not valid TOML: .*\(column \d+\)"):
        load_config(_spec(tmp_path, 'workload = "a"\npolicy fixed\n'), _sub("simulate"))
    for text, line in (("seed = 1\n[policy]\nname = 1\n", 2), ("seed = 1\npolicy.x = 1\n", 2),
                       ("seed = 1\nout = { a = 1 }\n", 2), ('seed = 1\n[[policy]]\nx = "a"\n', 2)):
        with pytest.raises(ConfigError, match=rf"run.toml:{line}: .*a table is not an option"):
            load_config(_spec(tmp_path, text), _sub("simulate"))
    with pytest.raises(ConfigError, match=r"missing.toml: cannot read it"):
        load_config(tmp_path / "missing.toml", _sub("simulate"))


def test_spec_line_numbers_skip_strings_arrays_and_tables(tmp_path):
    text = ('# a comment\nworkload = """\nseed = 3\n"""\npolicy = [\n  "seed",\n  "x",\n]\n'
            '"out" = "o"\n  seed   = 4\n')
    lines = {s.key: s.line for s in read_config(_spec(tmp_path, text), _sub("simulate"))}
    assert lines == {"workload": 2, "policy": 5, "out": 9, "seed": 10}


def test_spec_errors_exit_2_at_the_cli(tmp_path, capsys):
    path = _spec(tmp_path, 'workload = "philly-small"\npolcy = "fixed"\n')
    assert main(["simulate", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"coadapt simulate: error: {path}:2: polcy: unknown option; did you mean 'policy'?" in err
    assert main(["experiment", "--config", str(tmp_path / "none.toml")]) == 2


def _toy_parser() -> argparse.ArgumentParser:
    """Actions the real commands do not have (yet): append with a type, extend,
    store_false, nargs='+', a custom action, a hidden alias."""

    class Upper(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            setattr(namespace, self.dest, values.upper())

    p = argparse.ArgumentParser(prog="coadapt toy")
    p.add_argument("--num", action="append", type=int, default=None)
    p.add_argument("--tag", action="append", default=["base"])
    p.add_argument("--many", action="extend", nargs="+", default=None)
    p.add_argument("--no-color", dest="color", action="store_false")
    p.add_argument("--pair", nargs=2, type=float, default=None)
    p.add_argument("--name", action=Upper, default="X")
    p.add_argument("--old-name", dest="name", action=Upper, help=argparse.SUPPRESS)
    p.add_argument("--config")
    return p


def test_spec_generic_actions_round_trip_and_append_is_replaced(tmp_path):
    p = _toy_parser()
    path = _spec(tmp_path, "num = [1, 2]\ntag = \"a\"\nmany = [\"m\", \"n\"]\nno-color = true\n"
                 "pair = [0.5, 2]\nold_name = \"y\"\n")
    assert load_config(path, p) == {"num": [1, 2], "tag": ["a"], "many": ["m", "n"],
                                    "color": False, "pair": [0.5, 2.0], "name": "Y"}
    # a spec's list is the whole value: argparse would add a flag's to a default list
    assert p.parse_args(["--tag", "a"]).tag == ["base", "a"]
    apply_config(p, path)
    assert isinstance(p.get_default("num"), SpecList)
    assert p.parse_args([]).num == [1, 2]
    assert p.parse_args(["--num", "5", "--num", "6"]).num == [5, 6]  # replaced, then appended
    assert p.parse_args(["--tag", "t"]).tag == ["t"]
    args = p.parse_args(["--many", "q"])
    assert (args.many, args.color, args.name) == (["q"], False, "Y")
    out = tmp_path / "config.toml"
    write_config(out, args, p, skip=())
    data = tomllib.loads(out.read_text())
    assert "old-name" not in data and "config" not in data and data["no-color"] is True
    fresh = _toy_parser()
    apply_config(fresh, out)
    assert vars(fresh.parse_args([])) == {**vars(args), "config": None}


def test_spec_a_value_that_would_not_read_back_is_refused():
    p = _toy_parser()
    with pytest.raises(ValueError, match="--name: 'lower' would read back"):
        spec_of(argparse.Namespace(name="lower"), p)
    q = argparse.ArgumentParser(prog="q")
    q.add_argument("--level", type=int, default=3)
    with pytest.raises(ValueError, match="--level: None cannot be written"):
        spec_of(argparse.Namespace(level=None), q)


def _toy_run(root: Path) -> tuple[Path, Path]:
    from toyprofile import make_toy

    prof = make_toy("toy")
    traces = root / "ref" / "traces" / "toy"
    traces.mkdir(parents=True)
    prof.placements.write_csv(traces / "placements.csv")
    for batch, df in prof.validation.items():
        df.write_csv(traces / f"validation-{batch}.csv")
    wl = root / "w.csv"
    wl.write_text("name,time,application,num_replicas,batch_size\n"
                  + "".join(f"j{i},{30 * i},toy,{1 + i % 2},64\n" for i in range(4)))
    return root / "ref", wl


def test_spec_simulate_rerun_from_its_config_reproduces_the_results(tmp_path, capsys):
    import json

    ref, wl = _toy_run(tmp_path)
    spec = _spec(tmp_path, f'workload = "{wl}"\nprofiles = "adaptdl:{ref}"\npolicy = "fixed,pollux"\n'
                 'cluster = "2x4"\npreset = "osdi21"\nno-plots = true\n')
    first, second = tmp_path / "first", tmp_path / "second"
    assert main(["simulate", "--config", str(spec), "--interval", "30", "--seed", "4",
                 "--out", str(first), "--no-progress"]) == 0
    written = tomllib.loads((first / "config.toml").read_text())
    assert (written["interval"], written["seed"], written["restart-delay"]) == (30.0, 4, 30.0)
    assert main(["simulate", "--config", str(first / "config.toml"), "--out", str(second),
                 "--no-progress"]) == 0
    assert f"coadapt simulate --config {first / 'config.toml'}" in capsys.readouterr().out
    for policy in ("fixed", "pollux"):
        a, b = (json.loads((d / policy / "summary.json").read_text()) for d in (first, second))
        for key in ("avg_jct", "makespan", "utilization", "completed", "jain_rho"):
            assert a[key] == b[key], (policy, key)
    again = tomllib.loads((second / "config.toml").read_text())
    assert {k: v for k, v in again.items() if k != "out"} == {k: v for k, v in written.items() if k != "out"}
