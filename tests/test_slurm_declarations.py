"""A site's slurm.conf is read through the declarations of the model's settings (djsb/setting.py
SlurmName): every declared Slurm key is read from a real slurm.conf file, no key is read that no
declaration names, and a scheduler option added as one declaration plus its use in the planner
(bf_max_job_part, backfill.c ``_job_exceeds_max_bf_param``, its effect worked by hand in
tests/test_scheduler_settings.py) is read from slurm.conf by ``djsb history``,
from YAML by ``djsb simulate``, and documented."""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import FIVE_JOBS

from djsb import slurm_text
from djsb.cli import main
from djsb.history.notes import unmodelled
from djsb.model import PartitionSpec
from djsb.model.scheduler import reference
from djsb.setting import SCHEDULER_PARAMETERS, slurm_names
from djsb.simulate import load_experiment
from djsb.slurmsite.slurm_conf import RECORD_KEYS, SlurmConf, read_slurm_conf
from djsb.slurmsite.slurm_conf_keys import SLURM_CONF_KEYS
from djsb.slurmsite.slurm_config import (
    MODELLED,
    NOTED_ONLY,
    OBSERVATION_KEYS,
    cluster_spec,
    from_slurm,
    read_keys,
    scheduler_config,
)

ROOT = Path(__file__).resolve().parents[1]
SACCT = ROOT / "tests" / "fixtures" / "sacct"

SAMPLES: dict[Callable[[str], Any], tuple[str, Any]] = {
    slurm_text.slurm_time: ("2-00:00:00", 2 * 86400.0),
    slurm_text.seconds: ("17", 17.0),
    slurm_text.count: ("7", 7),
    slurm_text.count_or_unlimited: ("7", 7),
    slurm_text.array_reservations: ("7", 7),
    slurm_text.flag: ("", True),
    slurm_text.yes_no: ("YES", True),
    slurm_text.weight: ("1234", 1234.0),
    slurm_text.scheduler_type: ("sched/builtin", "none"),
    slurm_text.select_type: ("select/cons_res", "cons_tres"),
    slurm_text.kill_wait_seconds: ("7", 7.0),
    slurm_text.over_time_seconds: ("2", 120.0),
    slurm_text.resv_over_run_seconds: ("3", 180.0),
    slurm_text.job_requeue: ("0", False),
    slurm_text.preempt_type: ("preempt/partition_prio", "partition_prio"),
    slurm_text.preempt_mode: ("requeue", "requeue"),
    slurm_text.preempt_within: ("REQUEUE,WITHIN", True),
    slurm_text.preempt_gang: ("gang", True),
    slurm_text.time_slice_seconds: ("10", 10.0),
    slurm_text.partition_preempt_mode: ("requeue", "requeue"),
    slurm_text.exempt_seconds: ("00:02:00", 120.0),
    slurm_text.requeue_delay: ("cred_expire=30,socket=/run/munge.sock", 31.0),
    slurm_text.fair_share_algorithm: ("NO_FAIR_TREE", "classic"),
    slurm_text.usage_reset_period: ("Weekly", "weekly"),
    slurm_text.integer: ("-3", -3),
    slurm_text.time_limit: ("1-00:00:00", 86400.0),
    slurm_text.oversubscribe: ("yes:4", "NO"),
    slurm_text.partition_qos: ("normal", "normal"),
    slurm_text.allow_qos: ("Normal,debug", ("normal", "debug")),
    slurm_text.max_tres: ("MAX_TRES,NO_FAIR_TREE", True),
    slurm_text.no_normal_tres: ("NO_FAIR_TREE,NO_NORMAL_TRES", True),
    slurm_text.priority_tres_weights: ("CPU=1000,GRES/gpu=3000", (("cpu", 1000.0), ("gres/gpu", 3000.0))),
    slurm_text.memory_default: ("4G", 4096.0),
    slurm_text.cpus_limit: ("32", 32),
    slurm_text.cpus_default: ("6", 6),
    slurm_text.accounting_safe: ("associations,limits,SAFE", True),
    slurm_text.tres_weights: ("CPU=1.0,Mem=0.25G,GRES/gpu=2.0", (("cpu", 1.0), ("mem", 0.25 / 1024),
                                                                ("gres/gpu", 2.0))),
}
"""A text Slurm writes for each parser of slurm_text, and the value the model takes from it (worked
by hand: slurm.conf(5) times are minutes when bare, 2-00:00:00 is two days; OverTimeLimit is minutes;
ResvOverRun is minutes; a TRESBillingWeights memory weight per GB is per 1024 MB; AllowQos names are
lower-cased, read_config.c; a memory size of 4G is 4096 MiB; AccountingStorageEnforce's words are
compared in any case, read_config.c ``_validate_accounting_storage_enforce``)."""

DECLARED = [(cls, field, index) for cls in MODELLED for field, name in slurm_names(cls).items()
            for index in range(len(name.keys))]
PARTITION_KEYS = list(slurm_names(PartitionSpec))


@pytest.mark.parametrize(("cls", "field", "index"), DECLARED,
                         ids=[f"{cls.__name__}.{field}.{index}" for cls, field, index in DECLARED])
def test_every_declared_slurm_key_is_read_from_a_sites_slurm_conf(tmp_path: Path, cls: type, field: str,
                                                                  index: int) -> None:
    # the key written in lower case, as a site may: slurm.conf keys are case-insensitive
    key = slurm_names(cls)[field].keys[index]
    text, value = SAMPLES[key.parse]
    item = key.name if key.flag else f"{key.name}={text}"
    line = f"{SCHEDULER_PARAMETERS.lower()}={item}" if key.within else f"{key.name.lower()}={text}"
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"ClusterName=site\n{line}\n")
    read = from_slurm(cls, read_slurm_conf(conf).config)
    others = slurm_names(cls)[field].keys
    if len(others) > 1:  # KillWait + OverTimeLimit: the other key at Slurm's default (30 s, 0 min)
        defaults = [SAMPLES[k.parse][1] if k is key else k.parse(k.default or "") for k in others]
        value = sum(defaults)
    assert read[field] == value


@pytest.mark.parametrize("field", PARTITION_KEYS)
def test_every_declared_partition_key_is_read_from_a_sites_slurm_conf(tmp_path: Path, field: str) -> None:
    key = slurm_names(PartitionSpec)[field].keys[0]
    text, value = SAMPLES[key.parse]
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"NodeName=n[1-2] CPUs=2\nPartitionName=p Nodes=ALL {key.name.lower()}={text}\n")
    site = read_slurm_conf(conf)
    partition = cluster_spec(site.partitions, site.nodes, "p").partitions[0]
    assert getattr(partition, field) == value


def test_no_key_is_read_that_no_declaration_names() -> None:
    # every string in the site readers and the history replay that is a slurm.conf key (Slurm 22.05's
    # list) is a declared key, a record keyword, a key read only to note it has no model, or one read
    # to find Slurm's own records of what it did
    allowed = {key.lower() for key in (*read_keys(), *RECORD_KEYS, *NOTED_ONLY, *OBSERVATION_KEYS)}
    options = {key.name for cls in MODELLED for name in slurm_names(cls).values() for key in name.keys
               if key.within}
    found = {}
    for package in ("slurmsite", "history", "calibrate"):
        for path in sorted((ROOT / "djsb" / package).glob("*.py")):
            if path.name in ("slurm_conf_keys.py", "slurm_conf.py"):  # the list itself and the grammar
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    word = node.value
                    if (word.lower() in SLURM_CONF_KEYS and word.lower() not in allowed) or \
                            (word.startswith("bf_") and word in options):
                        found[word] = path.name
    assert found == {}


def test_a_key_no_declaration_reads_is_noted(tmp_path: Path) -> None:
    # the option below is no declaration's: it must be named among what the model does not reproduce
    conf = read_slurm_conf_text(tmp_path, "SchedulerParameters=bf_interval=30,bf_max_job_assoc=4\n")
    assert "SchedulerParameters bf_max_job_assoc=4 has no model" in unmodelled(conf)
    assert not [note for note in unmodelled(conf) if "bf_interval" in note]


def read_slurm_conf_text(folder: Path, text: str) -> SlurmConf:
    path = folder / "slurm.conf"
    path.write_text(text)
    return read_slurm_conf(path)


def test_bf_max_job_part_from_slurm_conf_from_yaml_and_in_the_reference(tmp_path: Path) -> None:
    conf = read_slurm_conf_text(tmp_path, "SchedulerParameters=bf_max_job_part=2\n")
    assert scheduler_config(conf.config).bf_max_job_part == 2
    assert scheduler_config({"SchedulerParameters": "bf_max_job_part=0"}).bf_max_job_part == math.inf
    assert not [note for note in unmodelled(conf) if "bf_max_job_part" in note]
    path = tmp_path / "sim.yaml"
    path.write_text(FIVE_JOBS + "cluster:\n  nodes: [{count: 2, cores: 2}]\npolicy:\n  scheduler:\n"
                    "    bf_max_job_part: 3\n")
    assert load_experiment(path).scheduler.bf_max_job_part == 3
    assert "| `bf_max_job_part` | unlimited | jobs | bf_max_job_part |" in reference()


def test_djsb_history_reads_bf_max_job_part_from_the_sites_slurm_conf(tmp_path: Path) -> None:
    # the mini-cluster's record and slurm.conf, the option added to its SchedulerParameters: the replay
    # notes no setting about it, and a what-if of it is accepted and replayed
    conf = tmp_path / "slurm.conf"
    text = (SACCT / "minicluster-slurm.conf").read_text()
    conf.write_text(text.replace("SchedulerParameters=", "SchedulerParameters=bf_max_job_part=2,", 1))
    assert "bf_max_job_part=2," in conf.read_text()
    out = tmp_path / "history"
    assert main(["history", str(SACCT / "minicluster-22.05-allocations.txt"), "--slurm-conf", str(conf), "-q",
                 "--set", "SchedulerParameters=bf_max_job_part=1", "-o", str(out)]) == 0
    assert "bf_max_job_part" not in (out / "notes.txt").read_text()
    assert (out / "what-if" / "jobs.csv").exists()


def test_the_option_is_one_declaration_and_its_use() -> None:
    # no list elsewhere in the product names it: the declaration (djsb/model/scheduler.py) and the
    # planner that uses it are the only files of djsb/ that do
    named = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "djsb").rglob("*.py")
                   if "bf_max_job_part" in path.read_text())
    assert named == ["djsb/model/backfill/planner.py", "djsb/model/scheduler.py"]
