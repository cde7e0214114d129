"""The fair-share usage a calibration accrues, on Slurm (sshare before and after a replay) and on
the model (its association tree after replaying the same jobs).

Slurm's priority/multifactor charges a job's CPUs x seconds to its association while it runs, at
each run of its decay thread (every PriorityCalcPeriod) and at the job's end
(``priority_p_job_end``: ``_apply_new_usage`` up to the end), decayed with PriorityDecayHalfLife;
sshare shows each association's RawUsage. The charge at the end is made only when
AccountingStorageEnforce has ``limits`` (acct_policy.c, ``_adjust_limit_usage`` returns before
``priority_g_job_end`` otherwise): without it the seconds a job ran after the decay thread's last
run before its end are never charged (one case measured on the mini-cluster: 474 of 782 CPU-s),
which the model does not do (:func:`end_charge_note`). The model charges the same CPU-seconds continuously and
decays them continuously (djsb.model.priority.accounts). Two differences are Slurm's arithmetic,
not scheduling (priority_multifactor.c, 22.05): the usage already charged decays only at the
decay thread's runs, by ``(1 - 0.693 / half-life) ^ seconds``, so sshare's answer is decayed to
the thread's last run, up to a PriorityCalcPeriod before it was asked; and a span charged at once
is decayed by its own length, ``delta * (1 - 0.693/h) ^ delta``, against the model's integral.
:func:`decay_tolerance` bounds both, relative to the usage.
"""

from __future__ import annotations

import math

import pandas as pd

from djsb.model.priority.base import PriorityPlugin
from djsb.model.priority.multifactor import MultifactorPriority
from djsb.slurmsite.slurm_config import parse_sshare_usage

COLUMNS = ("when", "time", "user", "account", "raw_usage")


def end_charge_note(config: dict[str, str]) -> list[str]:
    """A note when Slurm charges no usage at a job's end (AccountingStorageEnforce without limits)."""
    enforce = config.get("AccountingStorageEnforce", "")
    if "limits" in enforce.lower() or "safe" in enforce.lower():
        return []
    return [f"AccountingStorageEnforce = {enforce or 'none'}: Slurm charges a job's fair-share usage only "
            "at its decay thread's runs while the job runs, not the rest at its end (acct_policy.c); the "
            "model charges all of it"]


def snapshot(when: str, time: float, sshare: str) -> pd.DataFrame:
    """sshare's answer at ``time`` (Unix seconds) as rows of :data:`COLUMNS`; ``when``: before/after."""
    return pd.DataFrame([{"when": when, "time": time, "user": user, "account": account, "raw_usage": usage}
                         for (user, account), usage in sorted(parse_sshare_usage(sshare).items())],
                        columns=list(COLUMNS))


def usage_at(table: pd.DataFrame, when: str) -> dict[tuple[str, str], float]:
    """The RawUsage of each (user, account) in the ``when`` snapshot of ``table``."""
    rows = table[table["when"] == when]
    return {(str(r.user), str(r.account)): float(r.raw_usage) for r in rows.itertuples()}


def snapshot_time(table: pd.DataFrame, when: str) -> float:
    return float(table.loc[table["when"] == when, "time"].iloc[0])


def model_usage(priority: PriorityPlugin, at: float) -> dict[tuple[str, str], float]:
    """Each user association's decayed usage in the model's tree at ``at`` (after its replay)."""
    if not isinstance(priority, MultifactorPriority):
        return {}
    priority.settle_usage(at)
    tree = priority.tree
    return {key: tree.usage(node, at) for key, node in tree.users.items()}


def decay_tolerance(half_life: float, calc_period: float) -> float:
    """How far, relative to the usage, Slurm's decay arithmetic may put its RawUsage from the
    model's continuous one (module docstring): the decay of up to one calc period not yet applied,
    plus twice the first-order error of a period's span decayed by its own length."""
    if half_life <= 0:
        return 0.0
    rate = math.log(2) / half_life
    return (1 - math.exp(-rate * calc_period)) + rate * calc_period


def usage_table(slurm: pd.DataFrame, priority: PriorityPlugin) -> pd.DataFrame:
    """Per association of the replay's jobs: RawUsage before and after on Slurm, the usage Slurm
    accrued (after - before), the model's after and its accrued, and the difference of the two."""
    before, after = usage_at(slurm, "before"), usage_at(slurm, "after")
    model = model_usage(priority, snapshot_time(slurm, "after"))
    rows = []
    for key in sorted(set(model) & set(after)):
        start = before.get(key, 0.0)
        rows.append({"user": key[0], "account": key[1], "slurm_before": start, "slurm_after": after[key],
                     "slurm_accrued": after[key] - start, "model_after": model[key],
                     "model_accrued": model[key] - start})
    table = pd.DataFrame(rows, columns=["user", "account", "slurm_before", "slurm_after", "slurm_accrued",
                                        "model_after", "model_accrued"])
    table["difference"] = table["model_accrued"] - table["slurm_accrued"]
    return table
