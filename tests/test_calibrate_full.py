"""The full calibration cases: 300 KTH-SP2 jobs on a 16-node mini-cluster, each replayed twice on
Slurm (Slurm against itself) and once on the model, under the policies sites run. Minutes each,
so they run only when asked, into a directory kept for their figures::

    DJSB_SLURM_NODES=16 DJSB_SLURM_ACCOUNTING=1 bash .ci/slurm.sh start
    DJSB_CALIBRATE_FULL=/tmp/calibrate-full .venv/bin/pytest -s tests/test_calibrate_full.py [-k CASE]

Each case writes ``CASE/`` (comparison.json, report.html ...) there and prints its figures; a
case cut short continues with ``djsb calibrate --resume DIR/CASE`` under the same slurm.conf. The
workload: KTH-SP2's 300 jobs from trace second 6380000, CPUs x 0.32 (its 100 nodes on the
cluster's 32 CPUs), times x 0.001 (about 8 minutes a replay). The memory case (CR_Core_Memory,
the mini-cluster's) takes MetaCentrum's 300 jobs from its 1,200th (trace second 1238981), whose
records give each job's memory: CPUs x 32 / 2,176 (the trace's two clusters), memory per CPU
scaled from the trace's machines (the .machines file) to the mini-cluster's nodes, times x 0.0005.
The time-limit case (jobs killed at their limits) takes LANL-CM5's 300 jobs from its 36,000th
(trace second 15916776), a third of whose records run past their requested times: CPUs x 32 /
1,024, times x 0.004, Slurm killing those jobs at their limits. (Among the windows at every
6,000th job, the one whose two replays fit the case's 20 minutes.) The partitions case replays the
KTH window under multifactor with MareNostrum 4's QoS weight too (1e6, 004 sec. 5), two
partitions (``oversub``: every node, no limit; ``cal_half``: n[1-8], MaxTime 2 min,
PriorityJobFactor 2) and two QoS (``normal``; ``cal_debug``: priority 100, at most 4 running jobs
per user), each dealt round-robin over the trace's users. The TRES case replays the KTH window
with QoS TRES limits enforced (AccountingStorageEnforce=associations,limits,qos) over three QoS dealt
the same way: ``normal``, ``cal_grp`` (GrpTRES=cpu=12) and ``cal_user`` (MaxTRESPerUser=cpu=8). The
billing case replays the memory case's window under multifactor with PriorityFlags=MAX_TRES and
``oversub``'s TRESBillingWeights CPU=1.0,Mem=2.0G, so a job bills its CPUs or twice its GiB,
whichever is larger, and fair share charges that. The traces are ../shared's.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from slurm_plugin import SlurmCluster, fair_share_accounts, has_accounting, sacctmgr, slurm_settings

from djsb.calibrate.run import run_calibration

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

OUT = os.environ.get("DJSB_CALIBRATE_FULL")
TRACES = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"
TRACE = TRACES / "KTH-SP2-1996-2.1-cln.swf.gz"
METACENTRUM = TRACES / "MetaCentrum-wagap-2013.swf.gz"
LANL = TRACES / "LANL-CM5-1994-4.1-cln.swf.gz"
KTH_WINDOW = f"{{swf: {TRACE}, start: 6380000, count: 300, cpu_scale: 0.32, time_scale: 0.001}}"
NODES = 16
ACCOUNTS = {"cal_a": 40, "cal_b": 30, "cal_c": 30}
# MareNostrum 4's weights (paper 004 Table 3.2) with its times compressed as the workload's
# (x 0.001): PriorityMaxAge 10 days -> 14 min, PriorityDecayHalfLife 7 days -> 10 min;
# PriorityCalcPeriod its minimum, 1 minute.
MULTIFACTOR = {"PriorityType": "priority/multifactor", "PriorityWeightFairShare": "100000",
               "PriorityWeightAge": "100000", "PriorityWeightJobSize": "10000", "PriorityMaxAge": "00:14:00",
               "PriorityDecayHalfLife": "00:10:00", "PriorityCalcPeriod": "1",
               "AccountingStorageEnforce": "associations,limits"}
BASE_PARAMETERS = "batch_sched_delay=0,sched_interval=2,bf_interval=5"
"""The mini-cluster's SchedulerParameters (docker/slurm-cluster.sh)."""
CASES: dict[str, dict[str, str]] = {
    "fair_tree": MULTIFACTOR,
    "classic": {**MULTIFACTOR, "PriorityFlags": "NO_FAIR_TREE"},
    "defer": {"SchedulerParameters": f"defer,{BASE_PARAMETERS}"},
    "no_defer": {"SchedulerParameters": BASE_PARAMETERS},
    "memory": {},
    "kill": {},
    "partitions": {**MULTIFACTOR, "PriorityWeightQOS": "1000000", "PriorityWeightPartition": "10000",
                   "AccountingStorageEnforce": "associations,limits,qos"},
    "tres": {"AccountingStorageEnforce": "associations,limits,qos"},
    "billing": {**MULTIFACTOR, "PriorityFlags": "MAX_TRES"},
}
PARTITION = "PartitionName=cal_half Nodes=n[1-8] MaxTime=2 PriorityJobFactor=2 OverSubscribe=YES:4"
"""The partitions case's second partition (scontrol create)."""
QOS = {"cal_debug": ("Priority=100", "MaxJobsPerUser=4")}
"""The partitions case's second QoS (sacctmgr add qos), besides Slurm's ``normal``."""
TRES_QOS = {"cal_grp": ("GrpTRES=cpu=12",), "cal_user": ("MaxTRESPerUser=cpu=8",)}
"""The TRES case's QoS, besides ``normal``: at most 12 CPUs held by the jobs of one, at most 8 by one
user's jobs of the other (the calibration's jobs are all its submitter's)."""
BILLING = "CPU=1.0,Mem=2.0G"
"""The billing case's TRESBillingWeights on ``oversub`` (scontrol update): a GiB bills as 2 CPUs."""
TRACE_OF = {"memory": METACENTRUM, "kill": LANL, "billing": METACENTRUM}


def trace_machines(machines: Path) -> tuple[int, float]:
    """Cores and MiB per core of a trace's machines: the .machines file's clusters (columns:
    index, name, nodes, cores per node, ..., KiB per node), memory weighted by their cores."""
    rows = [line.split() for line in machines.read_text().splitlines() if line.strip()]
    cores = sum(int(row[2]) * int(row[3]) for row in rows)
    return cores, sum(int(row[2]) * int(row[5]) for row in rows) / 1024 / cores


def node_resources(node: str) -> tuple[int, float]:
    """CPUTot and RealMemory per CPU (MiB) of a mini-cluster node (scontrol show node)."""
    fields = dict(item.split("=", 1) for item in subprocess.run(
        ["scontrol", "--oneliner", "show", "node", node], capture_output=True, text=True,
        check=True).stdout.split() if "=" in item)
    return int(fields["CPUTot"]), float(fields["RealMemory"]) / float(fields["CPUTot"])


def workload(case: str, nodes: tuple[str, ...]) -> str:
    """The case's workload (see the module docstring)."""
    if case == "kill":
        return (f"{{swf: {LANL}, start: 15916776, count: 300, cpu_scale: 0.03125, time_scale: 0.004, "
                "at_time_limit: kill}")
    if case not in ("memory", "billing"):
        return KTH_WINDOW
    trace_cores, trace_memory = trace_machines(METACENTRUM.with_suffix(".machines"))
    cpus, memory = node_resources(nodes[0])
    return (f"{{swf: {METACENTRUM}, start: 1238981, count: 300, cpu_scale: {cpus * len(nodes) / trace_cores:.6f}, "
            f"time_scale: 0.0005, memory_scale: {memory / trace_memory:.6f}}}")


@contextlib.contextmanager
def partitions_and_qos(user: str) -> Iterator[None]:
    """The partitions case's partition and QoS, the QoS open to ``user``'s associations; both
    removed afterwards."""
    try:
        subprocess.run(["scontrol", "create", *PARTITION.split()], check=True, capture_output=True)
        with qos_for(user, QOS):
            yield
    finally:  # whatever was made, even if a later step failed
        subprocess.run(["scontrol", "delete", PARTITION.split()[0]], check=False, capture_output=True)


@contextlib.contextmanager
def qos_for(user: str, qos: Mapping[str, tuple[str, ...]]) -> Iterator[None]:
    """The QoS ``qos`` (name: sacctmgr's limits) open to ``user``'s associations, removed afterwards."""
    try:
        for name, limits in qos.items():
            sacctmgr("add", "qos", name, *limits)
            sacctmgr("modify", "user", user, "set", f"qos+={name}")
        yield
    finally:
        for name in qos:
            sacctmgr("delete", "qos", name)


@contextlib.contextmanager
def billing_weights(partition: str, weights: str) -> Iterator[None]:
    """``partition``'s TRESBillingWeights set for the block, cleared afterwards."""
    try:
        subprocess.run(["scontrol", "update", f"PartitionName={partition}", f"TRESBillingWeights={weights}"],
                       check=True, capture_output=True, timeout=60)
        yield
    finally:
        subprocess.run(["scontrol", "update", f"PartitionName={partition}", "TRESBillingWeights="],
                       check=False, capture_output=True, timeout=60)


def case_setup(case: str, user: str) -> contextlib.AbstractContextManager[None]:
    """What a case makes on Slurm besides slurm.conf's settings (removed afterwards)."""
    if case == "partitions":
        return partitions_and_qos(user)
    if case == "tres":
        return qos_for(user, TRES_QOS)
    if case == "billing":
        return billing_weights("oversub", BILLING)
    return contextlib.nullcontext()


@pytest.mark.timeout(3600)  # two replays of about 9 minutes, two slurmctld restarts
@pytest.mark.parametrize("case", list(CASES))
def test_full_case(slurm_cluster: SlurmCluster, case: str) -> None:
    if OUT is None:
        pytest.skip("the full cases run only with DJSB_CALIBRATE_FULL=DIR (minutes each)")
    trace = TRACE_OF.get(case, TRACE)
    if not trace.is_file():
        pytest.skip(f"no {trace} (../shared/data/traces)")
    if len(slurm_cluster.nodes) < NODES:
        pytest.skip(f"needs {NODES} nodes: DJSB_SLURM_NODES={NODES} bash .ci/slurm.sh start")
    fair_share = CASES[case].get("PriorityType") == "priority/multifactor"
    if (fair_share or case == "tres") and not has_accounting():
        pytest.skip("no slurmdbd: start the mini-cluster with DJSB_SLURM_ACCOUNTING=1")
    out = Path(OUT) / case
    config = Path(OUT) / f"{case}.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    accounts = f"  accounts: [{', '.join(ACCOUNTS)}]\n" if fair_share else ""
    if case == "partitions":
        accounts += f"  qos: [normal, {', '.join(QOS)}]\n  partitions: [oversub, cal_half]\n"
    if case == "tres":
        accounts += f"  qos: [normal, {', '.join(TRES_QOS)}]\n"
    config.write_text(f"""\
seed: 1
workload: {workload(case, slurm_cluster.nodes)}
slurm:
  partition: oversub
  runs: 2
  work_dir: /tmp/djsb-calibrate-full
  poll_interval: 5
{accounts}""")
    with fair_share_accounts(ACCOUNTS if fair_share else {}, getpass.getuser()), \
            slurm_settings(slurm_cluster, CASES[case]), \
            case_setup(case, getpass.getuser()):
        print(run_calibration(config, out))
    figures = json.loads((out / "comparison.json").read_text())
    assert figures["model vs slurm_1"]["jobs"] == figures["slurm_2 vs slurm_1"]["jobs"] == 300
