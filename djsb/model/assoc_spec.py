"""Association limits as sacctmgr sets them (``sacctmgr modify account|user ... set GrpJobs=...``),
declared for ``cluster.associations`` and read from a site's ``sacctmgr show associations``.

An association is an account (``user`` none) or a user within an account; an account hangs under its
``parent`` (``root`` by default), a user association under its account. The Grp limits (GrpJobs,
GrpSubmitJobs, GrpTRES, GrpWall, GrpTRESMins, GrpTRESRunMins: :mod:`djsb.model.tres_minutes`) hold
every job below the association, at each level of the tree; the per-job and per-user limits (MaxJobs,
MaxSubmitJobs, MaxTRES, MaxTRESPerNode and MaxTRESMins per job, MaxWall) hold the jobs of a user
association, and one it does not
set is its nearest ancestor's: slurmdbd gives a child the limits of its parent that the child does
not set (acct_policy.c: "We don't need to look at the regular limits for parents since
we have pre-propogated them"). How the model enforces them: :mod:`djsb.model.assoc_limits`.

A user association may name a partition (``sacctmgr add user ... partition=P``): it is then a sibling of
the user's association without one, under the same account, and it is the association of the user's
jobs in that account and partition; a job of a partition the user has no association of its own for
gets the one without partition (assoc_mgr.c ``assoc_mgr_fill_in_assoc``, called by job_mgr.c
``_job_create`` with ``assoc_rec.partition`` the job's partition: ``_find_assoc_rec`` with the
partition first, then without). Its limits, own or inherited from its account (not from the user's
association without partition, which is not its parent), hold those jobs alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import MISSING, dataclass
from typing import Any

from djsb.errors import ConfigError
from djsb.model.tres import TresLimits, read_tres_limits
from djsb.setting import setting
from djsb.yamlnodes import Located, as_int, as_str, as_time_limit

ROOT = "root"
ASSOCIATION = "cluster.associations[]"
"""Where a config writes an association's keys."""


def _optional_str(node: Located) -> str | None:
    return as_str(node)


@dataclass(frozen=True, slots=True)
class AssocSpec:
    """One association and its limits (none: no limit of its own)."""

    account: str = setting(MISSING, as_str, "", "Account", "its account", where=ASSOCIATION)
    user: str | None = setting(None, _optional_str, "", "User",
                               "its user (none: the account's own association)", where=ASSOCIATION)
    parent: str = setting(ROOT, as_str, "", "ParentName", "the account above an account", where=ASSOCIATION)
    grp_jobs: int | None = setting(None, lambda n: as_int(n, 1), "jobs", "GrpJobs",
                                   "running jobs below it, at each level (AssocGrpJobsLimit)",
                                   where=ASSOCIATION)
    max_jobs: int | None = setting(None, lambda n: as_int(n, 1), "jobs", "MaxJobs",
                                   "running jobs of a user association (AssocMaxJobsLimit)",
                                   where=ASSOCIATION)
    max_submit_jobs: int | None = setting(None, lambda n: as_int(n, 1), "jobs", "MaxSubmitJobs",
                                          "pending and running jobs of a user association: one more is "
                                          "refused at submission (AssocMaxSubmitJobLimit)", where=ASSOCIATION)
    max_wall: float | None = setting(None, lambda n: as_time_limit(n, unit="s", minimum=1), "s", "MaxWall",
                                     "a job's longest limit: longer pends forever "
                                     "(AssocMaxWallDurationPerJobLimit); a job asking none gets it",
                                     where=ASSOCIATION)
    grp_submit_jobs: int | None = setting(
        None, lambda n: as_int(n, 1), "jobs", "GrpSubmitJobs",
        "pending and running jobs below it, at each level: one more is refused at submission "
        "(AssocGrpSubmitJobsLimit)", where=ASSOCIATION)
    grp_wall: float | None = setting(
        None, lambda n: as_time_limit(n, unit="s", minimum=1), "s", "GrpWall",
        "wall time of the jobs below it, decayed as fair share's usage, in whole minutes (rounded up): no "
        "job below starts once it reaches it (AssocGrpWallLimit; with enforce_safe not when the job's "
        "limit would pass it); a job asking no limit gets it", where=ASSOCIATION)
    grp_tres: TresLimits = setting((), read_tres_limits, "TRES", "GrpTRES",
                                   "TRES the running jobs below it hold, at each level (AssocGrpCpuLimit, "
                                   "AssocGrpGRES...)", where=ASSOCIATION)
    max_tres_per_job: TresLimits = setting((), read_tres_limits, "TRES", "MaxTRES",
                                           "TRES of one job (AssocMaxCpuPerJobLimit...)", where=ASSOCIATION)
    max_tres_per_node: TresLimits = setting(
        (), lambda n: read_tres_limits(n, per_node=True), "TRES", "MaxTRESPerNode",
        "TRES of one job of a user association per node it runs on (its TRES divided by its node count): "
        "more pends (AssocMaxCpuPerNode, AssocMaxMemPerNode, AssocMaxGRESPerNode)", where=ASSOCIATION)
    grp_tres_mins: TresLimits = setting((), read_tres_limits, "TRES-min", "GrpTRESMins",
                                        "TRES-minutes of the decayed usage below it, at each level: no job "
                                        "below starts once it reaches it (AssocGrpCPUMinutesLimit...; with "
                                        "enforce_safe running jobs' and the job's own minutes count too)",
                                        where=ASSOCIATION)
    grp_tres_run_mins: TresLimits = setting((), read_tres_limits, "TRES-min", "GrpTRESRunMins",
                                            "TRES-minutes the running jobs below it have left of their time "
                                            "limits, with the job's own (AssocGrpCPURunMinutesLimit...)",
                                            where=ASSOCIATION)
    max_tres_mins_per_job: TresLimits = setting((), read_tres_limits, "TRES-min", "MaxTRESMins",
                                                "TRES times time limit of one job of a user association: "
                                                "more pends forever (AssocMaxCpuMinutesPerJobLimit...)",
                                                where=ASSOCIATION)
    partition: str | None = setting(None, _optional_str, "", "Partition",
                                    "the partition of a user association: it holds the user's jobs in its "
                                    "account and this partition, instead of the user's association without "
                                    "partition (assoc_mgr.c assoc_mgr_fill_in_assoc; none: every partition "
                                    "without one of its own)", where=ASSOCIATION)


def wall_minutes(seconds: float) -> int:
    """A GrpWall in whole minutes, as sacctmgr keeps it (``time_str2mins`` rounds seconds up)."""
    return math.ceil(seconds / 60.0)


class AssocTree:
    """The associations declared, and each user association's path up to ``root``."""

    def __init__(self, specs: Iterable[AssocSpec]) -> None:
        self.accounts: dict[str, AssocSpec] = {}
        self.users: dict[tuple[str, str], AssocSpec] = {}
        self.partitions: dict[tuple[str, str, str], AssocSpec] = {}
        """The user associations of one partition, by (user, account, partition)."""
        for spec in specs:
            user = spec.user
            if user is None and spec.partition is not None:
                raise ConfigError(f"association {spec.account}: only a user's association has a partition "
                                  f"({spec.partition!r})", key=ASSOCIATION)
            if user is None:
                known: dict[Any, AssocSpec] = self.accounts
                key: Any = spec.account
            elif spec.partition is None:
                known, key = self.users, (user, spec.account)
            else:
                known, key = self.partitions, (user, spec.account, spec.partition)
            if key in known:
                who = f"{user}@{spec.account}" if user is not None else spec.account
                where = f" partition {spec.partition}" if spec.partition is not None else ""
                raise ConfigError(f"association {who}{where} given twice", key=ASSOCIATION)
            known[key] = spec
        for name in self.accounts:
            self.ancestors(name)  # refuses a cycle
        every = (*self.accounts.values(), *self.users.values(), *self.partitions.values())
        self.walled = any(spec.grp_wall is not None for spec in every)
        """Whether an association sets GrpWall."""

    def ancestors(self, account: str) -> tuple[str, ...]:
        """``account`` and the accounts above it, up to ``root``."""
        chain = [account]
        while chain[-1] != ROOT:
            spec = self.accounts.get(chain[-1])
            parent = spec.parent if spec is not None else ROOT
            if parent in chain:
                raise ConfigError(f"account cycle through {parent!r}", key=ASSOCIATION)
            chain.append(parent)
        return tuple(chain)

    def partition_of(self, user: str, account: str, partition: str) -> str | None:
        """The partition of the association a job of ``user`` in ``account`` and ``partition`` gets:
        ``partition`` when the user has an association of its own there, else None (the one without
        partition: ``assoc_mgr_fill_in_assoc``'s second ``_find_assoc_rec``)."""
        return partition if self.partitions and (user, account, partition) in self.partitions else None

    @staticmethod
    def user_key(user: str, account: str, partition: str | None) -> tuple[str, ...]:
        """The usage key of a user association: (user, account), with its partition when it has one."""
        return (user, account) if partition is None else (user, account, partition)

    def path(self, user: str, account: str, partition: str | None = None) -> tuple[AssocSpec | None, ...]:
        """The associations from ``user``'s in ``account`` (of ``partition``: :meth:`partition_of`'s)
        up to ``root`` (None: one not declared)."""
        own = self.users.get((user, account)) if partition is None else \
            self.partitions[(user, account, partition)]
        return (own, *(self.accounts.get(name) for name in self.ancestors(account)))

    def default_wall(self, user: str, account: str, partition: str | None = None) -> float | None:
        """The time limit (s) a job of ``user`` in ``account`` asking none gets from its associations:
        the least of its MaxWall (own or inherited) and the GrpWall of each level of its path, as
        ``_acct_policy_validate``'s ``_validate_time_limit`` calls (GrpWall at each level, MaxWall at the
        user association) leave it (None: none of them is set)."""
        own = self.inherited(user, account, "max_wall", partition)
        if not self.walled:
            return own
        walls = [wall_minutes(spec.grp_wall) * 60.0 for spec in self.path(user, account, partition)
                 if spec is not None and spec.grp_wall is not None]
        if own is not None:
            walls.append(own)
        return min(walls) if walls else None

    def inherited(self, user: str, account: str, name: str, partition: str | None = None) -> Any:
        """A per-user limit of ``user`` in ``account`` (of ``partition``): its own, else its nearest
        ancestor's (None)."""
        return next((getattr(spec, name) for spec in self.path(user, account, partition)
                     if spec is not None and getattr(spec, name) not in (None, ())), None)
