"""The shared command-line vocabulary: one spelling per thing, old ones announced."""

from __future__ import annotations

import subprocess
import sys

import pytest

from coadapt.cli import COMMANDS, build_parser, subparser


def _parse(argv: list[str]):
    return build_parser(argv).parse_args(argv)


def test_policy_is_repeatable_and_takes_comma_lists_in_every_command():
    for command in ("simulate", "experiment", "live"):
        args = _parse([command, "--policy", "fixed,pollux", "--policy", "sia"])
        assert args.policy == ["fixed", "pollux", "sia"], command


def test_policy_defaults_differ_by_command_but_a_flag_replaces_the_default():
    assert _parse(["simulate"]).policy == ["all"]
    assert _parse(["live"]).policy == ["pollux"]
    assert "pollux" in _parse(["experiment"]).policy
    assert _parse(["experiment", "--policy", "sia"]).policy == ["sia"]


def test_old_spellings_still_work_with_one_line_notice(capsys):
    args = _parse(["experiment", "--policies", "fixed,sia", "--jobs", "3", "--live-costs", "none"])
    assert args.policy == ["fixed", "sia"] and args.parallel == 3 and args.calibration == "none"
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "--policies is deprecated; use --policy" in line]
    assert [line for line in err if "--jobs is deprecated; use --parallel" in line]
    assert [line for line in err if "--live-costs is deprecated; use --calibration" in line]
    gen = _parse(["workload", "generate", "--jobs", "12"])
    assert gen.num_jobs == 12


def test_deprecated_spellings_are_hidden_from_help():
    text = subparser(build_parser(["experiment"]), "experiment").format_help()
    assert "--parallel" in text and "--policies" not in text and "--live-costs" not in text


def test_one_default_cluster_and_seeds_from_one():
    for command in ("simulate", "experiment"):
        assert _parse([command]).cluster == "8x2"
    assert _parse(["workload", "generate"]).cluster == "8x2"
    assert _parse(["simulate"]).seed == 1
    assert _parse(["experiment", "-j", "2"]).parallel == 2


def test_every_command_help_ends_with_examples_that_parse():
    parser = build_parser()
    for cmd in COMMANDS:
        text = subparser(parser, cmd.name).format_help()
        assert "examples" in text, cmd.name


def test_help_loads_no_numpy_and_no_torch():
    code = ("import sys, contextlib, io\nfrom coadapt.cli import main\n"
            "for argv in (['--help'], ['simulate', '--help'], ['experiment', '--help']):\n"
            "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            "        main(argv)\n"
            "print(sorted(m for m in ('numpy', 'torch', 'polars', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_live_command_without_torch_says_how_to_get_it(monkeypatch, capsys):
    from coadapt import cli

    def needs_torch(args):
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    parser = build_parser(["job", "list"])
    monkeypatch.setattr(cli, "build_parser", lambda argv=None: parser)
    subparser(subparser(parser, "job"), "list").set_defaults(func=needs_torch)
    assert cli.main(["job", "list"]) == 2
    assert "pip install -e '.[live]'" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["live", "--resume"], ["live", "--resume", "--out", "x"]])
def test_live_resume_is_a_flag(argv):
    assert _parse(argv).resume is True
