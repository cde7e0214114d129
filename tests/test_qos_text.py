"""A site's QoS from ``sacctmgr show qos``: the limits the model enforces (djsb/model/limits.py) read
from what Slurm 22.05 prints. The fixture is the mini-cluster's own answer, for a QoS added with
``sacctmgr add qos capture_limits Priority=10 MaxJobsPerUser=3 MaxWall=2-00:00:00 Flags=DenyOnLimit
MaxTRESPerJob=cpu=8,gres/gpu=2 MaxTRESPerNode=gres/gpu=1 MaxTRESPerUser=cpu=16,mem=8G,billing=40
MaxTRESPerAccount=gres/gpu=4 GrpTRES=cpu=32,node=4,gres/gpu=6 GrpJobs=20 MaxJobsPerAccount=5
MaxSubmitJobsPerUser=10``."""

from __future__ import annotations

from pathlib import Path

import pytest

from djsb.errors import ConfigError
from djsb.model.cluster_spec import QosSpec
from djsb.slurmsite.qos_text import QOS_COMMAND, QOS_FORMAT, parse_qos

FIXTURES = Path(__file__).parent / "fixtures"


def test_every_limit_sacctmgr_prints_is_read_as_the_qos_declares_it() -> None:
    table = parse_qos((FIXTURES / "slurm_show" / "sacctmgr_qos_limits.txt").read_text())
    normal, limited = table.qos
    assert normal == QosSpec("normal")
    assert limited == QosSpec(
        "capture_limits", 10, max_jobs_per_user=3, max_wall=2 * 86400.0, deny_on_limit=True,
        max_tres_per_job=(("cpu", 8), ("gres/gpu", 2)), max_tres_per_node=(("gres/gpu", 1),),
        max_tres_per_user=(("cpu", 16), ("mem", 8 * 1024)), max_tres_per_account=(("gres/gpu", 4),),
        grp_tres=(("cpu", 32), ("node", 4), ("gres/gpu", 6)), grp_jobs=20, max_jobs_per_account=5,
        max_submit_jobs_per_user=10)
    assert table.notes == ["QoS capture_limits: MaxTRESPU billing=40 has no model (only cpu, mem, node, gres/gpu "
                           "are counted)"]
    assert QOS_COMMAND[-1] == "format=" + ",".join(QOS_FORMAT)


def test_the_three_columns_asked_before_still_read() -> None:
    table = parse_qos("normal|0|\ncal_debug|100|2\n")
    assert table.qos == (QosSpec("normal", 0, None), QosSpec("cal_debug", 100, 2)) and table.notes == []


@pytest.mark.parametrize(("line", "error"), [
    ("x|0||zz", "MaxWall 'zz' is not a Slurm time"),
    ("x|0||||cpu=two", "MaxTRES: cpu=two: the amount 'two' is not a number"),
    ("x|0||||mem=1.5K", "MaxTRES: mem=0.00146484 is not a whole amount"),
    ("x|0|||||||||many", "'many' is not a number"),
])
def test_a_value_that_is_not_one_names_the_file_line_and_key(line: str, error: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_qos(f"normal|0|\n{line}\n", "qos.txt", "--qos")
    assert raised.value.line == 2 and error in str(raised.value) and "--qos" in str(raised.value)


def test_the_preempt_lists_grace_times_and_modes_sacctmgr_prints_are_read() -> None:
    # the mini-cluster's answer for capture_mode_within (Preempt=capture_mode_low, GraceTime=30,
    # PreemptMode=cancel,within printed within,cancel) and capture_mode_low (PreemptMode=requeue)
    # beside normal (cluster): what preempt/qos goes by (preempt_qos.c preempt_p_preemptable,
    # _job_preempt_mode)
    table = parse_qos((FIXTURES / "slurm_show" / "sacctmgr_qos_preempt.txt").read_text())
    by_name = {qos.name: qos for qos in table.qos}
    within, low, normal = by_name["capture_mode_within"], by_name["capture_mode_low"], by_name["normal"]
    assert (within.preempt, within.grace_time, within.preempt_mode, within.preempt_within) == \
        (("capture_mode_low",), 30.0, "cancel", True)
    assert (low.preempt, low.grace_time, low.preempt_mode, low.preempt_within) == ((), 0.0, "requeue", False)
    assert normal == QosSpec("normal")
    assert table.preempt_lists and table.notes == []
    # a file without the Preempt column (asked before DJSB read it) says so
    assert not parse_qos("normal|0|\n").preempt_lists
    with pytest.raises(ConfigError, match="GraceTime 'soon' is not a Slurm time"):
        parse_qos("normal|0|||||||||||||soon\n")
    with pytest.raises(ConfigError, match="PreemptMode 'sometimes' is not one"):
        parse_qos("normal|0|||||||||||||00:00:00|sometimes\n")
    # SUSPEND is a QoS's own mode (djsb/model/suspension.py); its GANG has no sense (preempt_qos.c
    # _job_preempt_mode drops it), which a note says when it stands alone
    suspended = parse_qos("normal|0|||||||||||||00:00:00|suspend,gang\n")
    assert suspended.qos[0].preempt_mode == "suspend" and suspended.notes == []
    gang = parse_qos("normal|0|||||||||||||00:00:00|gang\n")
    assert gang.qos[0].preempt_mode == "cluster"
    assert gang.notes == ["QoS normal: PreemptMode gang: GANG on a QoS has no sense (Slurm drops it)"]


def test_docs_give_the_command_djsb_reads() -> None:
    # docs/history.md tells a site what to run: exactly the command whose columns parse_qos reads
    docs = (Path(__file__).parents[1] / "docs" / "history.md").read_text()
    assert f"`{' '.join(QOS_COMMAND)} > qos.txt`" in docs
