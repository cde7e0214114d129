"""``djsb history`` on any input: every bad file, option or value is one line naming the file, line
and key, exit 2, never a traceback; no input (a device, a huge hostlist) fills the memory, checked
under a memory limit; every ``--set`` is read before anything is replayed. Through the real CLI, on
the committed mini-cluster dump and slurm.conf changed one fault at a time."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "sacct"
DUMP = (FIXTURES / "minicluster-22.05-allocations.txt").read_text().splitlines()
CONF = (FIXTURES / "minicluster-slurm.conf").read_text()
HEADER = DUMP[0].split("|")
MEMORY_LIMIT = 4 << 30
"""The address space the command may use in the resource cases: an unbounded read of /dev/zero or
/dev/urandom would pass it in seconds."""


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def history(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "djsb", "history", *argv, "-q", "-o", "out"], cwd=cwd,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
                          preexec_fn=limited)


def refused(done: subprocess.CompletedProcess[str], line: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [line]


def with_field(name: str, value: str, row: int = 1) -> str:
    """The dump with field ``name`` of data line ``row`` set to ``value``."""
    fields = DUMP[row].split("|")
    fields[HEADER.index(name)] = value
    return "\n".join([*DUMP[:row], "|".join(fields), *DUMP[row + 1:]]) + "\n"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    (tmp_path / "dump.txt").write_text("\n".join(DUMP) + "\n")
    (tmp_path / "slurm.conf").write_text(CONF)
    return tmp_path


def test_the_untouched_site_replays(site: Path) -> None:
    assert history(site, "dump.txt", "--slurm-conf", "slurm.conf").returncode == 0


@pytest.mark.parametrize(("hostlist", "why"), [
    ("h[1-100000000]", "'h[1-100000000]': the range '1-100000000' names more than 65536 hosts"),
    ("h[16-1,x-]", "'h[16-1,x-]': the range '16-1' runs backwards"),
    ("h[1-16", "'h[1-16': unbalanced or nested brackets in a hostlist expression"),
])
def test_a_bad_nodename_hostlist_is_one_line_at_its_line(site: Path, hostlist: str, why: str) -> None:
    (site / "slurm.conf").write_text(CONF.replace("NodeName=n1 ", f"NodeName={hostlist} ", 1))
    line = CONF.splitlines().index(next(text for text in CONF.splitlines() if text.startswith("NodeName=n1 "))) + 1
    refused(history(site, "dump.txt", "--slurm-conf", "slurm.conf"), f"djsb: error: slurm.conf:{line}: NodeName: {why}")


def test_a_dump_of_a_header_alone_or_without_start_is_refused(site: Path) -> None:
    (site / "header.txt").write_text(DUMP[0] + "\n")
    refused(history(site, "header.txt", "--slurm-conf", "slurm.conf"),
            "djsb: error: header.txt: no job in the trace: it has no record (empty, or a header alone)")
    start = HEADER.index("Start")
    (site / "nostart.txt").write_text("\n".join("|".join(f for i, f in enumerate(line.split("|")) if i != start)
                                                for line in DUMP) + "\n")
    refused(history(site, "nostart.txt", "--slurm-conf", "slurm.conf"),
            "djsb: error: nostart.txt:1: no Start column: the replay is measured against the recorded starts "
            "(add Start to sacct --format)")


@pytest.mark.parametrize(("name", "value", "reason"), [
    ("Elapsed", "99999-00:00:00", "malformed_value"),  # a traceback in pandas' datetimes before
    ("Submit", "2026-11-27T11:44:47", "start_before_submit"),  # Start 10:36:28 + 4,099 s: a wait of -4,099 s
])
def test_impossible_records_are_skipped_and_counted(site: Path, name: str, value: str, reason: str) -> None:
    """Records no real site writes are skipped as malformed, each counted in notes.txt beside the
    dump's two jobs cancelled before they started."""
    (site / "odd.txt").write_text(with_field(name, value))
    done = history(site, "odd.txt", "--slurm-conf", "slurm.conf")
    assert done.returncode == 0, done.stderr
    assert f"3 record(s) of the dump are not replayed (2 cancelled_before_start, 1 {reason})" in \
        (site / "out" / "notes.txt").read_text()


def test_a_start_outside_the_dump_is_refused(site: Path) -> None:
    # the dump's first submission and last end, read from its lines by hand
    refused(history(site, "dump.txt", "--slurm-conf", "slurm.conf", "--start", "2000-01-01T00:00:00"),
            "djsb: error: --start: 2000-01-01T00:00:00 is outside the dump's span, 2026-11-27T10:36:28 to "
            "2026-11-27T11:07:11")


@pytest.mark.parametrize(("text", "option", "line"), [
    ("garbage line without pipes\n", "--qos", "'garbage line wit'... is not a line of 3 '|'-separated fields"),
    ("normal|high|10\n", "--qos", "'high' is not a number"),
    ("a|b\nzzz\n", "--associations", "'a|b' is not a line of 4 '|'-separated fields"),
    ("root|root|1e400\n", "--usage", "'1e400' is not a number"),
])
def test_a_garbage_site_file_is_one_line_at_its_line(site: Path, text: str, option: str, line: str) -> None:
    (site / "site.txt").write_text(text)
    refused(history(site, "dump.txt", "--slurm-conf", "slurm.conf", option, "site.txt"),
            f"djsb: error: site.txt:1: {option}: {line}")


@pytest.mark.parametrize(("setting", "line"), [
    ("SchedulerParameters=bf_window=abc", "--set SchedulerParameters: bf_window = 'abc': expected a number of "
     "minutes (quoted or not), or a Slurm time MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS, got 'abc'"),
    ("KillWait=-5", "--set KillWait: KillWait = '-5': not a number of seconds >= 0"),
    ("PriorityWeightAge=banana", "--set PriorityWeightAge: PriorityWeightAge = 'banana': not a number >= 0"),
])
def test_every_set_is_read_before_anything_is_replayed(site: Path, setting: str, line: str) -> None:
    done = history(site, "dump.txt", "--slurm-conf", "slurm.conf", "--set", setting)
    refused(done, f"djsb: error: {line}")
    assert not (site / "out").exists()


def test_an_unknown_slurm_conf_key_is_noted(site: Path) -> None:
    (site / "slurm.conf").write_text(CONF + "SchedulerParamters=bf_window=10\n")
    done = history(site, "dump.txt", "--slurm-conf", "slurm.conf")
    assert done.returncode == 0, done.stderr
    assert "slurm.conf key SchedulerParamters is not one Slurm 22.05 reads (a typo? slurm.conf(5)): ignored" in \
        (site / "out" / "notes.txt").read_text()


def test_an_error_quotes_only_a_short_prefix_of_the_input(site: Path, tmp_path: Path) -> None:
    """An ``Include`` of a file that is not a slurm.conf (``/etc/shadow``) must not echo its line."""
    secret = tmp_path / "shadow"
    secret.write_text("alice:$y$j9T$SECRETSALT$SECRETHASHSECRETHASH:19000:0:99999:7:::\n")
    (site / "slurm.conf").write_text(f"Include {secret}\n" + CONF)
    refused(history(site, "dump.txt", "--slurm-conf", "slurm.conf"),
            f"djsb: error: {secret}:1: 'alice:$y$j9T$SEC'... is not Key=Value")


@pytest.mark.parametrize(("role", "device", "line"), [
    ("dump", "/dev/zero", "/dev/zero:1: a line longer than 1,048,576 characters: not sacct --parsable2 output?"),
    ("slurm.conf", "/dev/urandom", "/dev/urandom: more than 67,108,864 characters: not a slurm.conf?"),
    ("log", "/dev/zero", "/dev/zero:1: --slurmctld-log: a line longer than 1,048,576 characters: not a slurmctld "
     "log?"),
    ("qos", "/dev/zero", "/dev/zero:1: --qos: a line longer than 1,048,576 characters: not the output --qos takes?"),
])
def test_a_device_is_refused_before_it_fills_the_memory(site: Path, role: str, device: str, line: str) -> None:
    argv = {"dump": [device, "--slurm-conf", "slurm.conf"], "slurm.conf": ["dump.txt", "--slurm-conf", device],
            "log": ["dump.txt", "--slurm-conf", "slurm.conf", "--slurmctld-log", device],
            "qos": ["dump.txt", "--slurm-conf", "slurm.conf", "--qos", device]}[role]
    refused(history(site, *argv), f"djsb: error: {line}")
