"""A site's association limits as ``sacctmgr show associations`` prints them, read into the model's
:class:`~djsb.model.assoc_spec.AssocSpec` (enforced by :mod:`djsb.model.assoc_limits`).

:data:`~djsb.slurmsite.slurm_config.ASSOCIATIONS_COMMAND` asks, after fair share's four columns
(Account, User, ParentName, Share), the limits of :data:`LIMIT_COLUMNS`: GrpJobs, GrpTRES, MaxJobs,
MaxSubmit (MaxSubmitJobs), MaxTRES (per job), MaxWall (MaxWallDurationPerJob), then GrpTRESMins,
GrpTRESRunMins and MaxTRESMins (MaxTRESMinsPerJob), TRES-minutes as ``cpu=6000,gres/gpu=100``
(:mod:`djsb.model.tres_minutes`), then GrpSubmit (GrpSubmitJobs), GrpWall (minutes, printed as a time
like MaxWall: sacctmgr's ``print_fields_time``) and MaxTRESPerNode, empty when unset (sacctmgr's
column names in src/sacctmgr/common.c), then Partition: a user association of one partition
(:mod:`djsb.model.assoc_spec`), kept even without a limit, since it alone holds the user's jobs in
that partition. sacctmgr prints a user association's inherited per-user limits on its own row. A file
of fewer columns (the first four alone, or without the TRES-minutes or the last ones: what DJSB asked
before) reads as no limit of the columns it lacks, and no association of a partition. A TRES the
model does not count (billing, a license, a typed GPU) is left out with a note, as for the QoS
(:mod:`.qos_text`).
"""

from __future__ import annotations

from djsb.errors import ConfigError, excerpt
from djsb.model.assoc_spec import ROOT, AssocSpec
from djsb.model.tres import TRES_NAMES
from djsb.slurm_text import slurm_time
from djsb.slurmsite.qos_text import tres_limit
from djsb.slurmsite.slurm_config import ASSOCIATION_COLUMNS, site_lines, site_number

LIMIT_COLUMNS = ASSOCIATION_COLUMNS[4:-1]
"""The limit columns asked after fair share's four (before Partition)."""


def parse_association_limits(text: str, source: str = "sacctmgr show associations",
                             key: str = "associations") -> tuple[tuple[AssocSpec, ...], list[str]]:
    """The accounts of the answer and the user associations that set a limit, and notes on what of
    them has no model; a value that is not one is ConfigError naming ``source``, the line and ``key``."""
    found: list[AssocSpec] = []
    notes: list[str] = []
    for number, fields in site_lines(text, 4, source, key):
        values = dict(zip(ASSOCIATION_COLUMNS, (field.strip() for field in fields), strict=False))
        account, user, partition = values["Account"], values["User"] or None, values.get("Partition") or None
        if not account or (user is not None and partition is None
                           and not any(values.get(column) for column in LIMIT_COLUMNS)):
            continue  # every account is kept: the tree's shape decides which Grp limits hold a job
        counts = {column: site_number(values[column], int, source, number, key) if values.get(column)
                  else None for column in ("GrpJobs", "MaxJobs", "MaxSubmit", "GrpSubmit")}
        limits = {}
        for column in ("GrpTRES", "MaxTRES", "GrpTRESMins", "GrpTRESRunMins", "MaxTRESMins",
                       "MaxTRESPerNode"):
            limits[column], left = tres_limit(values.get(column, ""), column, source, number, key)
            notes += [f"association {user or ''}{'@' if user else ''}{account}: {column} {item} has no model "
                      f"(only {', '.join(TRES_NAMES)} are counted)" for item in left]
        max_wall, grp_wall = (_time(values.get(column, ""), column, source, number, key)
                              for column in ("MaxWall", "GrpWall"))
        found.append(AssocSpec(account, user, parent=values["ParentName"] or ROOT if user is None else ROOT,
                               grp_jobs=counts["GrpJobs"], max_jobs=counts["MaxJobs"],
                               max_submit_jobs=counts["MaxSubmit"], max_wall=max_wall,
                               grp_tres=limits["GrpTRES"], max_tres_per_job=limits["MaxTRES"],
                               grp_tres_mins=limits["GrpTRESMins"],
                               grp_tres_run_mins=limits["GrpTRESRunMins"],
                               max_tres_mins_per_job=limits["MaxTRESMins"],
                               grp_submit_jobs=counts["GrpSubmit"], grp_wall=grp_wall,
                               max_tres_per_node=limits["MaxTRESPerNode"],
                               partition=partition if user is not None else None))
    return tuple(found), notes


def _time(text: str, column: str, source: str, line: int, key: str) -> float | None:
    """A time column (MaxWall, GrpWall) in seconds, None when empty; ConfigError when not a Slurm time."""
    try:
        return slurm_time(text) if text else None
    except ValueError:
        raise ConfigError(f"{column} {excerpt(text)} is not a Slurm time", source=source, line=line,
                          key=key) from None
