"""What every command shares: -v/-q, and shell completion generated from the parser."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from djsb.cli import build_parser, main
from djsb.completion import subcommands
from djsb.progress import NORMAL, set_verbosity

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def normal_verbosity() -> None:
    """main() sets the process's verbosity: every test starts from the default."""
    set_verbosity(NORMAL)


def test_every_command_takes_verbose_and_quiet() -> None:
    for name, sub in subcommands(build_parser()).items():
        options = {option for action in sub.parser._actions for option in action.option_strings}
        assert {"-v", "--verbose", "-q", "--quiet"} <= options, name


def simulate(capsys: pytest.CaptureFixture[str], tmp_path: Path, *flags: str) -> str:
    config = tmp_path / "sim.yaml"
    config.write_text("workload: {generator: poisson_exponential, params: {n_jobs: 50, arrival_rate: 0.1, "
                      "service_rate: 0.02}}\ncluster: {nodes: [{count: 2, cores: 2}]}\noutput: {plots: false}\n")
    assert main(["simulate", *flags, str(config), "-o", str(tmp_path / f"out{len(flags)}")]) == 0
    return capsys.readouterr().err


def test_quiet_says_nothing_on_stderr_and_default_says_progress(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert simulate(capsys, tmp_path, "-q") == ""
    assert "djsb: jobs 50/50 (100%)" in simulate(capsys, tmp_path)


def test_verbose_adds_the_traceback_to_the_one_line_error(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "what.yaml"
    path.write_text("colour: blue\n")
    assert main(["validate", "-v", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and err.splitlines()[-1].startswith(f"djsb: error: {path}:1:")


def bash_complete(script: Path, words: str) -> list[str]:
    """What the generated bash completion offers after ``words`` (the last one being completed)."""
    line = f"source {shlex.quote(str(script))}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); " \
           "_djsb; printf '%s\\n' \"${COMPREPLY[@]}\""
    done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completion_offers_commands_options_and_choices(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "bash"]) == 0
    script = tmp_path / "djsb.bash"
    script.write_text(capsys.readouterr().out)
    assert bash_complete(script, "djsb s") == ["simulate", "sweep"]
    assert bash_complete(script, "djsb sweep --ex") == ["--executor"]
    assert bash_complete(script, "djsb sweep --executor ''") == ["local", "slurm"]
    assert bash_complete(script, "djsb run -") == ["-h", "--help", "-o", "--output", "--resume", "--force",
                                                   "--skip-failed", "--include-outages", "-v", "--verbose", "-q",
                                                   "--quiet", "--json"]
    assert bash_complete(script, "djsb validate conf") == ["configs"]


def test_zsh_completion_lists_every_command_with_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "zsh"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#compdef djsb\n") and out.endswith("compdef _djsb djsb\n")
    for name in subcommands(build_parser()):
        assert f"'{name}:" in out and f"        {name}) _arguments" in out
    assert "'--executor[run the points here, or as one Slurm job array (the config'\\''s sweep.slurm)]:value:(local " \
           "slurm)'" in out
    if shutil.which("zsh") is not None:
        assert subprocess.run(["zsh", "-n"], input=out, text=True, timeout=60).returncode == 0
