"""Node names as the config gives them: host names (RFC 1123) or Slurm hostlist expressions.

A hostlist expression is a prefix, then bracketed ranges, then a suffix, possibly repeated:
``n[1-4,7]`` is n1 n2 n3 n4 n7, ``n[01-03]`` keeps the zero padding (n01 n02 n03), ``r[1-2]n[1-2]``
is the product r1n1 r1n2 r2n1 r2n2 (sbatch(1) --nodelist: "a range of hosts (host[1-5,7,...] for
example)"). The config expands an expression into plain host names once, so every job module (Grid
Engine's ``-q queue@host``, LSF's ``-m``, the simulated cluster's node names) sees the same hosts and a
malformed bracket is an error at ``djsb validate`` time, not a rejection by the scheduler mid-run.
"""

from __future__ import annotations

import itertools
import re

from djsb.errors import excerpt

MAX_HOSTS = 65536
"""The most hosts one expression may expand to: a typo such as n[1-100000000] must not eat memory."""

_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")
_PIECES = re.compile(r"\[([^\[\]]*)\]")


def check_hostname(name: str) -> str:
    """``name`` when it is a host name by RFC 1123 sec. 2.1 (dot-separated labels of 1-63 letters,
    digits and hyphens, neither starting nor ending with a hyphen; 253 characters at most), else
    ValueError."""
    if not name or len(name) > 253 or not all(_LABEL.fullmatch(label) for label in name.split(".")):
        raise ValueError(f"{excerpt(name)} is not a host name (RFC 1123: letters, digits, '-' and '.' "
                         "between labels) nor a hostlist expression such as n[1-4,7]")
    return name


def _range_values(text: str, expression: str) -> list[str]:
    """The numbers of one bracket's comma-separated ranges, each keeping its lower bound's width."""
    values: list[str] = []
    for part in text.split(","):
        match = _RANGE.fullmatch(part)
        if match is None:
            raise ValueError(f"{excerpt(expression)}: {excerpt(part)} is not a number or a range lo-hi of "
                             "numbers")
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) < int(low):
            raise ValueError(f"{excerpt(expression)}: the range {excerpt(part)} runs backwards")
        if int(high) - int(low) + 1 > MAX_HOSTS:
            raise ValueError(f"{excerpt(expression)}: the range {excerpt(part)} names more than {MAX_HOSTS} "
                             "hosts")
        width = len(low) if low.startswith("0") else 0
        values += [str(number).zfill(width) for number in range(int(low), int(high) + 1)]
    return values


def expand_hostlist(expression: str, *, check: bool = True) -> list[str]:
    """The host names of one hostname or hostlist expression (``n[1-3]`` -> n1 n2 n3); ValueError when
    a bracket is malformed or unbalanced, a range is not numeric or runs backwards, or (``check``) a
    resulting name is not a host name."""
    literals = _PIECES.split(expression)  # even indices: text between brackets; odd: bracket contents
    if any("[" in text or "]" in text for text in literals[::2]):
        raise ValueError(f"{excerpt(expression)}: unbalanced or nested brackets in a hostlist expression")
    choices: list[list[str]] = [[text] if index % 2 == 0 else _range_values(text, expression)
                                for index, text in enumerate(literals)]
    total = 1
    for choice in choices:
        total *= len(choice)
    if total > MAX_HOSTS:
        raise ValueError(f"{excerpt(expression)} names more than {MAX_HOSTS} hosts")
    names = ["".join(parts) for parts in itertools.product(*choices)]
    return [check_hostname(name) for name in names] if check else names


NO_NODES = frozenset({"", "(null)", "None", "None assigned"})
"""What Slurm's commands print for a job without nodes (squeue, sacct)."""


def node_names(text: str) -> tuple[str, ...]:
    """The node names of a node list a scheduler printed (``n[1-3,7],gpu[01-02],login``), in order;
    none for Slurm's empty forms (:data:`NO_NODES`). Names are taken as the scheduler wrote them,
    not checked as host names."""
    text = text.strip()
    if text in NO_NODES:
        return ()
    return tuple(name for item in split_host_list(text) for name in expand_hostlist(item, check=False))


def split_host_list(text: str) -> list[str]:
    """Split a list of hosts written as one string at commas, spaces and tabs outside brackets, so
    ``n[1-2,5],m1 m2`` is the three expressions n[1-2,5], m1 and m2. A line break is not a separator:
    a name with one is an error, never two hosts."""
    items: list[str] = []
    current = ""
    depth = 0
    for char in text:
        depth += (char == "[") - (char == "]")
        if depth == 0 and char in ", \t":
            items.append(current)
            current = ""
        else:
            current += char
    return [item for item in [*items, current] if item]


_NUMBERED = re.compile(r"(.*?)([0-9]+)")


def _follows(previous: str, number: str) -> bool:
    """Whether ``number`` continues a range ending at ``previous``: one more, and written the same
    way (the same width, or neither zero-padded: n9 n10 is a range, n09 n010 is not)."""
    same_form = len(number) == len(previous) or not (previous.startswith("0") or number.startswith("0"))
    return int(number) == int(previous) + 1 and same_form


def compress_hostlist(names: list[str]) -> str:
    """``names`` as Slurm writes a node list (``scontrol show hostlist``): consecutive names with a
    common prefix before their number share one bracket, in which consecutive numbers written the
    same way make a range: n0 n1 n2 n5 m1 -> ``n[0-2,5],m1``; order and repeats are kept (n2 n1 ->
    ``n[2,1]``), a name without a number stays as it is. Expanding each item (:func:`split_host_list`,
    :func:`expand_hostlist`) gives ``names`` back."""
    items: list[str] = []
    prefix: str | None = None
    ranges: list[list[str]] = []  # [first, last] numbers as written

    def close() -> None:
        if prefix is None:
            return
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            items.append(prefix + ranges[0][0])
        else:
            items.append(prefix + "[" + ",".join(low if low == high else f"{low}-{high}"
                                                 for low, high in ranges) + "]")

    for name in names:
        match = _NUMBERED.fullmatch(name)
        if match is None:
            close()
            prefix, ranges = None, []
            items.append(name)
            continue
        head, number = match.group(1), match.group(2)
        if head != prefix:
            close()
            prefix, ranges = head, [[number, number]]
        elif _follows(ranges[-1][1], number):
            ranges[-1][1] = number
        else:
            ranges.append([number, number])
    close()
    return ",".join(items)
