"""The ``Key=Value`` records ``scontrol show partition`` and ``scontrol show node`` print: what the
Slurm job module asks before a run (the CPUs of the partition's nodes) and calibration reads to
build the model's cluster.
"""

from __future__ import annotations

import re

RECORD_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][\w:/.]*)=")


def parse_show_records(text: str) -> list[dict[str, str]]:
    """The ``Key=Value`` records of ``scontrol show partition`` or ``show node``, one per blank-line
    separated block. A value runs to the next key, so values with spaces (``OS=Linux 6.1 ...``)
    and with ``=`` inside (``TRES=cpu=8,mem=8G``) stay whole."""
    records = []
    for block in re.split(r"\n\s*\n", text):
        keys = list(RECORD_KEY.finditer(block))
        if not keys:
            continue
        ends = [match.start() for match in keys[1:]] + [len(block)]
        record = {match.group(1): block[match.end():end].strip()
                  for match, end in zip(keys, ends, strict=True)}
        records.append(record)
    return records
