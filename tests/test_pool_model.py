"""The pool model of paper 002: Table I energy, a hand-worked schedule, C3's Rank(c), the sweeps."""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from djsb.errors import ConfigError, TraceError
from djsb.pool.abandon import build_abandon
from djsb.pool.computers import Computer
from djsb.pool.config import located
from djsb.pool.event_loop import PoolSimulation
from djsb.pool.history_csv import read_history
from djsb.pool.interactive import Interruptions
from djsb.pool.metrics import pool_metrics
from djsb.pool.placement import PLACEMENTS, PlacementContext, cluster_ranks, idle_share
from djsb.pool.plots import replicate_keys, x_key
from djsb.pool.power import COMPUTER_TYPES, timeline_energy_kwh
from djsb.pool.runner import run_point
from djsb.pool.tasks import EndCause, Task

HOUR = 3600.0
NORMAL = COMPUTER_TYPES["normal"]  # Table I of 002: 57 W active, 40 W idle, 2 W asleep


def test_energy_of_a_hand_worked_timeline() -> None:
    # Normal PC, 10 h, sleeps after 30 min idle; a user [1 h, 2 h) then a task [2 h, 5 h):
    # asleep 1 h * 2 W = 2 Wh, active 4 h * 57 W = 228 Wh, idle 0.5 h * 40 W = 20 Wh,
    # asleep 4.5 h * 2 W = 9 Wh: 259 Wh.
    busy = [(1 * HOUR, 2 * HOUR), (2 * HOUR, 5 * HOUR)]
    assert timeline_energy_kwh(NORMAL, busy, 10 * HOUR, 1800.0) == pytest.approx(0.259)
    # High end (114/67/3 W), active [0, 1 h) and [3 h, 4 h) in 5 h, sleep after 1 h:
    # 114 + idle 1 h * 67 + asleep 1 h * 3 + 114 + idle 1 h * 67 = 365 Wh.
    high = COMPUTER_TYPES["high_end"]
    assert timeline_energy_kwh(high, [(0, HOUR), (3 * HOUR, 4 * HOUR)], 5 * HOUR, HOUR) == pytest.approx(0.365)


def one_computer_run(rule: dict[str, object]) -> dict[str, float]:
    """One normal PC with a user [1 h, 2 h); one good 1.5 h task submitted at 0; 6 h horizon."""
    spans = Interruptions((HOUR,), (2 * HOUR,), (EndCause.USER,))
    sim = PoolSimulation([Computer(0, 0, NORMAL)], [spans], [Task(0, 0.0, 1.5 * HOUR)],
                         build_abandon(located(rule)), PLACEMENTS["C1"], history=[spans], horizon=6 * HOUR,
                         sleep_after=1800.0, dedicated_kind=COMPUTER_TYPES["high_end"], seed=1)
    return pool_metrics(sim.run())


def test_hand_worked_schedule_energy_and_overhead() -> None:
    metrics = one_computer_run({"rule": "X0"})
    # Runs [0, 1 h) (evicted by the user) and [2 h, 3.5 h) (completes): overhead 3.5 - 0 - 1.5 = 2 h.
    assert metrics["mean_overhead_minutes"] == pytest.approx(120.0)
    assert metrics["good_task_hours_wasted"] == pytest.approx(1.0)
    # With the pool: active [0, 3.5 h) = 3.5 * 57 = 199.5 Wh, idle 0.5 h * 40 = 20, asleep 2 h * 2 = 4
    # -> 223.5 Wh. Users alone: asleep 1 h = 2, active 1 h = 57, idle 0.5 h = 20, asleep 3.5 h = 7
    # -> 86 Wh. The pool added 137.5 Wh.
    assert metrics["total_energy_kwh"] == pytest.approx(0.2235)
    assert metrics["energy_kwh"] == pytest.approx(0.1375)


def test_n1_kills_on_a_user_eviction_that_n2_forgives() -> None:
    assert one_computer_run({"rule": "N1", "n": 1})["good_tasks_killed"] == 1
    n2 = one_computer_run({"rule": "N2", "n": 1})
    assert (n2["good_tasks_killed"], n2["good_tasks_completed"]) == (0, 1)
    # I1(0.5 h): the watchdog stops the first run at 0.5 h and abandons the 1.5 h task.
    assert one_computer_run({"rule": "I1", "t_hours": 0.5})["good_tasks_killed"] == 1


def test_i1_retries_a_run_the_user_ends_at_exactly_t() -> None:
    # I1(1 h), 002: "abandon if individual time > t". The user logs in at 1 h, the instant the
    # watchdog would fire: the run [0, 1 h) lasted 1 h, not more, so the task is retried; the next
    # run [2 h, 3 h) is stopped by the watchdog (the task needs 1.5 h) and abandoned there: 2 h wasted.
    metrics = one_computer_run({"rule": "I1", "t_hours": 1.0})
    assert (metrics["good_tasks_killed"], metrics["good_task_hours_wasted"]) == (1, pytest.approx(2.0))


def test_dedicated_computers_take_a_miscreant_task() -> None:
    # D(n=1, m=1, d): the user evicts the 1.5 h task at 1 h; it moves to the dedicated high-end PC.
    # d = 2 h: it completes there at 2.5 h, overhead 2.5 - 0 - 1.5 = 1 h.
    done = one_computer_run({"rule": "D", "n": 1, "m": 1, "d_hours": 2})
    assert (done["dedicated_tasks"], done["good_tasks_completed"]) == (1, 1)
    assert done["mean_overhead_minutes"] == pytest.approx(60.0)
    # Energy added. Desktop: active [0, 2 h) (task then user) 2 * 57 = 114, idle 0.5 * 40 = 20, asleep
    # 3.5 * 2 = 7 -> 141 Wh, less 86 Wh for the user alone = 55. Dedicated (114/67/3 W): active 1.5 h
    # = 171, idle 0.5 h = 33.5, asleep 1 + 3 h = 12 -> 216.5 Wh, less 6 h asleep = 18 -> 198.5.
    assert done["energy_kwh"] == pytest.approx((55 + 198.5) / 1000)
    # d = 1 h: the dedicated run hits its maximum and the task is abandoned.
    assert one_computer_run({"rule": "D", "n": 1, "m": 1, "d_hours": 1})["good_tasks_killed"] == 1


def users(*hours: float) -> Interruptions:
    """One interactive session [0, h) on a 10 h horizon."""
    return Interruptions((0.0,), (hours[0] * HOUR,), (EndCause.USER,))


def test_c3_ranks_clusters_by_mean_idle_share() -> None:
    # Cluster 0: PCs used 5 h and 3 h of 10 -> idle shares 0.5, 0.7, Rank = (0.5 + 0.7) / 2 = 0.6.
    # Cluster 1: one PC used 3.5 h -> 0.65. C3 takes cluster 1's PC; C2 the single least used PC (0.7).
    computers = [Computer(0, 0, NORMAL), Computer(1, 0, NORMAL), Computer(2, 1, NORMAL)]
    shares = [idle_share(users(h), 10 * HOUR) for h in (5, 3, 3.5)]
    assert shares == pytest.approx([0.5, 0.7, 0.65])
    ranks = cluster_ranks([c.cluster for c in computers], shares)
    assert ranks == pytest.approx({0: 0.6, 1: 0.65})
    # At 10 h with sleep after 30 min: PC 0 busy until 9.8 h is awake, the others slept since 1 h.
    ctx = PlacementContext(computers, shares, ranks, random.Random(1), [9.8 * HOUR, HOUR, HOUR], 1800.0)
    now = 10 * HOUR
    assert PLACEMENTS["C3"]({0, 1, 2}, now, ctx) == 2
    assert PLACEMENTS["C2"]({0, 1, 2}, now, ctx) == 1
    assert PLACEMENTS["C1"]({0, 1, 2}, now, ctx) == 0  # the only awake one, every time
    assert PLACEMENTS["C3"]({0, 1}, now, ctx) == 0  # cluster 1 has nothing free: cluster 0, awake first
    ctx.last_busy_end[0] = HOUR
    assert {PLACEMENTS["C1"]({0, 1, 2}, now, ctx) for _ in range(50)} == {0, 1, 2}  # all asleep: at random


SMALL = {"seed": 3, "pool": {"days": 21, "generate": {"clusters": 4, "computers": 60}},
         "workload": {"generate": {"tasks": 500, "days": 10}}, "policy": {"placement": "C1"}}


def small_run(rule: dict[str, object], tmp_path: Path) -> dict[str, float]:
    return run_point({**SMALL, "policy": {"abandon": rule, "placement": "C1"}}, tmp_path / str(rule))


def test_n1_sweep_trades_good_tasks_for_energy(tmp_path: Path) -> None:
    # Paper 002 figs. 5: as n falls, energy and bad-task waste fall and good tasks killed rise.
    x0 = small_run({"rule": "X0"}, tmp_path)
    assert x0["good_tasks_killed"] == 0  # Table II: X0 kills no good task
    points = [small_run({"rule": "N1", "n": n}, tmp_path) for n in (10, 3, 1)]
    energies = [x0["energy_kwh"]] + [p["energy_kwh"] for p in points]
    waste = [x0["bad_task_hours_wasted"]] + [p["bad_task_hours_wasted"] for p in points]
    killed = [x0["good_tasks_killed"]] + [p["good_tasks_killed"] for p in points]
    assert energies == sorted(energies, reverse=True) and energies[-1] < 0.5 * energies[0]
    assert waste == sorted(waste, reverse=True)
    assert killed == sorted(killed) and killed[-1] > killed[1]
    assert (tmp_path / str({"rule": "X0"}) / "tasks.csv").exists()


def test_history_csv_reads_htcondor_columns(tmp_path: Path) -> None:
    path = tmp_path / "history.csv"
    path.write_text("ClusterId,QDate,CommittedTime,JobStatus\n1,1000,600,4\n2,1300,7200,3\n")
    good, bad = read_history(path)
    assert (good.submit, good.runtime, good.good) == (0.0, 600.0, True)
    assert (bad.submit, bad.runtime, bad.removal_after) == (300.0, None, 7200.0)
    path.write_text("submit,runtime,outcome\n0,60,completed\n5,abc,removed\n")
    with pytest.raises(TraceError, match=r"history.csv:3: runtime: expected seconds >= 0, got 'abc'"):
        read_history(path)


def test_cli_bad_config_is_one_line_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "pool.yaml"
    config.write_text("pool:\n  days: 7\n  generate: {clusters: 0}\nworkload: {generate: {tasks: 5}}\n"
                      "policy: {abandon: {rule: X0}}\n")
    done = subprocess.run([sys.executable, "-m", "djsb.cli", "pool", str(config), "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == f"djsb: error: {config}:3: pool.generate.clusters: must be >= 1, got 0"
    config.write_text("pool: {days: 7, generate: {}}\nworkload:\n  history: nowhere.csv\npolicy: {abandon: {rule: X0}}\n")
    done = subprocess.run([sys.executable, "-m", "djsb.cli", "pool", str(config)], capture_output=True, text=True,
                          check=False, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == f"djsb: error: {config}:3: workload.history: no such file '{tmp_path / 'nowhere.csv'}'"
    from djsb.pool.config import read_experiment

    # Half the gaps are short ones of mean 9.4 min: a 3 min mean idle gap leaves no room for long ones.
    with pytest.raises(ConfigError, match=r"pool.clusters\[0\]: mean_idle_minutes \(3\) must exceed short_gap"):
        read_experiment(located({"pool": {"days": 1, "clusters": [{"name": "a", "computers": 1, "mean_idle_minutes": 3}]},
                                 "workload": {"generate": {"tasks": 5, "days": 1}},
                                 "policy": {"abandon": {"rule": "X0"}}}), tmp_path)
    with pytest.raises(ConfigError, match=r"pool.days: \d+ of the 50 tasks are submitted after the simulated horizon"):
        read_experiment(located({"pool": {"days": 1, "generate": {"computers": 40}},
                                 "workload": {"generate": {"tasks": 50, "days": 2}},
                                 "policy": {"abandon": {"rule": "X0"}}}), tmp_path)


@pytest.mark.parametrize("rule", [{"rule": "X0"}, {"rule": "I1", "t_hours": 3},
                                  {"rule": "D", "n": 2, "m": 3, "d_hours": 30}])
@pytest.mark.parametrize("placement", ["C1", "C2", "C3"])
def test_runs_never_overlap_users_or_each_other(rule: dict[str, object], placement: str) -> None:
    from djsb.pool.config import read_experiment
    from djsb.pool.runner import simulate_pool

    config = {**SMALL, "workload": {"generate": {"tasks": 300, "days": 10}},
              "policy": {"abandon": rule, "placement": placement}}
    result = simulate_pool(read_experiment(located(config), Path.cwd()))
    runs_on: dict[int, list[tuple[float, float]]] = {}
    for record in result.records:
        assert record.outcome in {"completed", "abandoned", "removed", "unfinished"}
        assert all(a.end <= b.start for a, b in itertools.pairwise(record.runs))  # one run at a time
        if record.outcome == "completed":
            assert record.runs[-1].duration == pytest.approx(record.task.runtime)
        for run in record.runs:
            assert record.task.submit <= run.start <= run.end <= result.horizon
            runs_on.setdefault(run.computer, []).append((run.start, run.end))
    for computer, spans in runs_on.items():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))  # a computer runs one task at a time
        if computer >= 0:
            taken = result.interruptions[computer]
            for start, end in spans:
                assert taken.covering(start) is None
                nxt = taken.next_start(start)
                assert nxt is None or taken.starts[nxt] >= end  # evicted at the latest when a user comes
    if "m" in rule:
        assert {c for c in runs_on if c < 0} <= {-1, -2, -3}  # D(m = 3): three dedicated computers


def test_cli_runs_a_listed_pool_sweep(tmp_path: Path) -> None:
    config = tmp_path / "pool.yaml"
    config.write_text(
        "seed: 2\n"
        "pool:\n  days: 7\n  reboot_hour: 5\n  reboot_minutes: 10\n  sleep_after_minutes: 20\n"
        "  failure_mtbf_days: 30\n  failure_repair_hours: 1\n"
        "  clusters:\n"
        "    - {name: library, computers: 6, type: legacy, mean_idle_minutes: 60, mean_session_minutes: 45}\n"
        "    - {name: maths, computers: 4, type: high_end, open_hour: 9, close_hour: 17}\n"
        "workload: {generate: {tasks: 80, days: 3, bad_fraction: 0.1, bad_removal_days: 2}}\n"
        "policy: {abandon: {rule: A2, t_hours: 4}, placement: C2, dedicated_type: normal}\n"
        "sweep:\n  runner: pool\n  grid: {policy.abandon.t_hours: [2, 8]}\n  zip: {policy.placement: [C1, C3]}\n")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "djsb.cli", "pool", str(config), "-o", str(out)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    import pandas as pd

    table = pd.read_csv(out / "sweep.csv")
    assert list(table["point"]) == [0, 1, 2, 3]  # 2 grid values x 2 zipped
    assert list(table["policy.abandon.t_hours"]) == [2, 2, 8, 8]
    assert (table["good_tasks_completed"] + table["good_tasks_killed"] + table["good_tasks_unfinished"]
            == table["good_tasks"]).all()
    assert (out / "points" / "3" / "tasks.csv").exists() and (out / "policy_sweep.png").stat().st_size > 0


def test_run_tree_resolves_history_next_to_its_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from djsb.pool.runner import run_tree
    from djsb.yamlnodes import load_yaml

    site = tmp_path / "site"
    site.mkdir()
    # Two tasks on one always-idle PC (no short gaps, mean idle 1e9 min: no user in 2 days): a good 1 h task at 0
    # completes at 1 h (overhead 0); a bad task submitted at 2 h and removed 3 h later ran those 3 h.
    (site / "h.csv").write_text("submit,runtime,outcome\n100,3600,completed\n7300,10800,removed\n")
    config = site / "pool.yaml"
    config.write_text("pool: {days: 2, reboot_hour: 23.99, failure_mtbf_days: 1000000,\n"
                      "       clusters: [{name: a, computers: 1, mean_idle_minutes: 1.0e+9, short_gap_share: 0}]}\n"
                      "workload: {history: h.csv}\npolicy: {abandon: {rule: X0}}\n")
    monkeypatch.chdir(tmp_path)
    metrics = run_tree(load_yaml(config), tmp_path / "out")
    assert (metrics["good_tasks_completed"], metrics["bad_tasks_removed"]) == (1, 1)
    assert metrics["mean_overhead_minutes"] == pytest.approx(0.0)
    assert metrics["bad_task_hours_wasted"] == pytest.approx(3.0)
    # djsb pool without a sweep section writes the one run straight into OUT.
    from djsb.sweep.pool_command import run_pool

    ended = {h.name: (h.value, h.unit) for h in run_pool(config, tmp_path / "single").headline}
    assert ended["good_tasks_killed"] == (0, "tasks") and ended["bad_task_hours_wasted"] == (pytest.approx(3.0), "h")
    written = json.loads((tmp_path / "single" / "metrics.json").read_text())
    assert written["bad_task_hours_wasted"] == pytest.approx(3.0) and written["mean_bad_deallocations"] == 0


@pytest.mark.parametrize("name", ["pool-n1-sweep.yaml", "pool-baseline.yaml"])
def test_shipped_configs_hold_the_papers_defaults(name: str) -> None:
    from djsb.pool.config import read_experiment
    from djsb.sweep.spec import read_sweep

    path = Path(__file__).resolve().parent.parent / "configs" / name
    spec = read_sweep(path)
    assert spec.runner == "pool"
    for index in range(len(spec.points)):
        experiment = read_experiment(spec.point_tree(index), path.parent)
        pool = experiment.pool
        assert pool.reboot_hour == 5  # sec. V of 002: "rebooted nightly around 5am"
        # The rooms' idle means are lognormal factors of mean 1 around 002's 371 min (sec. II-B):
        # over 8 rooms their mean stays within a factor 2 of it.
        idle = [c.mean_idle_minutes for c in pool.clusters]
        assert 371 / 2 < sum(idle) / len(idle) < 371 * 2
        assert {c.kind.name for c in pool.clusters} <= {"normal", "high_end", "legacy"}  # Table I
        assert max(t.submit for t in experiment.tasks) < pool.horizon


def test_idle_gaps_have_the_papers_mean_and_percentiles() -> None:
    from djsb.pool.computers import ClusterSpec
    from djsb.pool.interactive import idle_gap

    # Fig. 4 / sec. II-B of 002: mean idle interval 371 min, 5% of them under 2 min, 1% under 1 min.
    room = ClusterSpec("room", 1, NORMAL)
    rng = random.Random(4)
    gaps = [idle_gap(room, rng) / 60.0 for _ in range(200_000)]
    # Sampling error: the mean's sd is ~ 733 / sqrt(100000) ~ 2.3 min; a share p's is sqrt(p / 200000).
    assert sum(gaps) / len(gaps) == pytest.approx(371.0, rel=0.03)
    assert sum(g < 2.0 for g in gaps) / len(gaps) == pytest.approx(0.05, abs=0.004)
    assert sum(g < 1.0 for g in gaps) / len(gaps) == pytest.approx(0.01, abs=0.002)


def test_a_swept_seed_is_never_the_x_axis_of_a_policy_sweep() -> None:
    import pandas as pd

    table = pd.DataFrame({"policy.placement": ["C1", "C1", "C3", "C3"], "seed": [1, 2, 1, 2],
                          "policy.abandon.n": [1, 1, 1, 1]})
    assert replicate_keys(["policy.placement", "seed", "workload.seed"]) == ["seed", "workload.seed"]
    assert x_key(table, ["policy.placement", "seed"]) == "policy.placement"  # the seed is numeric, not policy
    assert x_key(table, ["seed", "policy.placement", "policy.abandon.n"]) == "policy.abandon.n"
    assert x_key(table, ["seed"]) == "seed"


def test_c2_ranks_on_the_history_not_on_the_period_it_simulates() -> None:
    # Sec. III-A of 002: C2 targets the computers with the longest idle times between users, which
    # a pool knows from its history. PC 0 was used 5 h of the 10 h history (idle share 0.5), PC 1
    # 1 h (0.9): C2 puts the 2 h task submitted at 0 on PC 1. In the simulated period PC 1's user
    # comes at 1 h and PC 0 has none: the run on PC 1 is evicted at 1 h, the retry on PC 0 runs
    # [1 h, 3 h) and completes: overhead 3 - 0 - 2 = 1 h. (Ranking on the simulated period itself
    # would have foreseen the user and started on PC 0: overhead 0.)
    history = [users(5), users(1)]
    period = [Interruptions((), (), ()), Interruptions((HOUR,), (9 * HOUR,), (EndCause.USER,))]
    sim = PoolSimulation([Computer(0, 0, NORMAL), Computer(1, 0, NORMAL)], period, [Task(0, 0.0, 2 * HOUR)],
                         build_abandon(located({"rule": "X0"})), PLACEMENTS["C2"], history=history,
                         horizon=10 * HOUR, sleep_after=1800.0, dedicated_kind=COMPUTER_TYPES["high_end"], seed=1)
    result = sim.run()
    assert [(run.computer, run.start, run.end, run.cause) for run in result.records[0].runs] == [
        (1, 0.0, HOUR, EndCause.USER), (0, HOUR, 3 * HOUR, EndCause.COMPLETED)]
    assert pool_metrics(result)["mean_overhead_minutes"] == pytest.approx(60.0)
