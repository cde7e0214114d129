"""The reference page of ``policy.priority`` (docs/reference/priority.md), generated from the
declarations of each plugin's options (:func:`djsb.setting.setting`), so the page cannot
drift from what the plugins read."""

from __future__ import annotations

from djsb.model.priority.accounts import AccountSpec
from djsb.model.priority.multifactor import MultifactorOptions, MultifactorWeights
from djsb.model.priority.plugins import PRIORITY_PLUGINS
from djsb.model.priority.psp import PspAgingOptions
from djsb.setting import declared, table

PLUGINS: dict[str, tuple[str, tuple[type, ...]]] = {
    "fifo": ("Slurm's `PriorityType=priority/basic`: jobs run in submission order. No options.", ()),
    "multifactor": ("Slurm's `PriorityType=priority/multifactor` (paper 004 eq. 2.1-2.6): a weighted sum "
                    "of the age, job size, fair share, QoS and partition factors.",
                    (MultifactorOptions, MultifactorWeights, AccountSpec)),
    "psp_aging": ("PSP+AGING of paper 000: a user's accuracy group sets a job's first priority, which "
                  "ages with its wait.", (PspAgingOptions,)),
    "psp": ("PSP without aging of paper 000 (scenarios 2 and 5 of its Table 4). No options.", ()),
}
"""Each registered plugin: what it is, and its option records (the first the section's own keys,
the others the nested mappings their ``where`` names)."""


def records_section(records: tuple[type, ...]) -> list[str]:
    """The tables of a plugin's option records, each under the key path that writes it."""
    lines: list[str] = []
    for record in records:
        where = next(iter(declared(record).values())).where
        lines += ["", f"### `{where}`", "", *table(record)]
    return lines


def reference() -> str:
    """The Markdown reference of ``policy.priority`` (docs/reference/priority.md is this text)."""
    lines = ["# `policy.priority`: the model's priority plugins", "",
             "Generated from djsb/model/priority/ (`make reference`); a test fails when this file and the "
             "declarations differ. A time is a number of seconds or a Slurm time (`1-00:00:00`). "
             f"`plugin` names the plugin ({', '.join(PRIORITY_PLUGINS.names())}); without it the preset's "
             "plugin, else `multifactor` when other keys are given, else `fifo`. A section naming the "
             "preset's plugin refines it: the keys not given keep the preset's values."]
    for name in PRIORITY_PLUGINS.names():
        what, records = PLUGINS[name]
        lines += ["", f"## `plugin: {name}`", "", what, *records_section(records)]
    return "\n".join(lines) + "\n"
