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


def wall_minutes(seconds: float) -> int:
    """A GrpWall in whole minutes, as sacctmgr keeps it (``time_str2mins`` rounds seconds up)."""
    return math.ceil(seconds / 60.0)


class AssocTree:
    """The associations declared, and each user association's path up to ``root``."""

    def __init__(self, specs: Iterable[AssocSpec]) -> None:
        self.accounts: dict[str, AssocSpec] = {}
        self.users: dict[tuple[str, str], AssocSpec] = {}
        for spec in specs:
            user = spec.user
            if (spec.account in self.accounts) if user is None else ((user, spec.account) in self.users):
                raise ConfigError(f"association {spec.user or ''}{'@' if spec.user else ''}{spec.account} "
                                  "given twice", key=ASSOCIATION)
            if spec.user is None:
                self.accounts[spec.account] = spec
            else:
                self.users[(spec.user, spec.account)] = spec
        for name in self.accounts:
            self.ancestors(name)  # refuses a cycle
        every = (*self.accounts.values(), *self.users.values())
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

    def path(self, user: str, account: str) -> tuple[AssocSpec | None, ...]:
        """The associations from ``user``'s in ``account`` up to ``root`` (None: one not declared)."""
        return (self.users.get((user, account)),
                *(self.accounts.get(name) for name in self.ancestors(account)))

    def default_wall(self, user: str, account: str) -> float | None:
        """The time limit (s) a job of ``user`` in ``account`` asking none gets from its associations:
        the least of its MaxWall (own or inherited) and the GrpWall of each level of its path, as
        ``_acct_policy_validate``'s ``_validate_time_limit`` calls (GrpWall at each level, MaxWall at the
        user association) leave it (None: none of them is set)."""
        own = self.inherited(user, account, "max_wall")
        if not self.walled:
            return own
        walls = [wall_minutes(spec.grp_wall) * 60.0 for spec in self.path(user, account)
                 if spec is not None and spec.grp_wall is not None]
        if own is not None:
            walls.append(own)
        return min(walls) if walls else None

    def inherited(self, user: str, account: str, name: str) -> Any:
        """A per-user limit of ``user`` in ``account``: its own, else its nearest ancestor's (None)."""
        return next((getattr(spec, name) for spec in self.path(user, account)
                     if spec is not None and getattr(spec, name) not in (None, ())), None)
