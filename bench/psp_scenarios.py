"""Run a sweep config's points with ``djsb simulate`` and write the sweep's layout (stand-in).

Until ``djsb sweep`` (issue 17) is merged, this expands ``sweep.grid`` (cartesian product) x
``sweep.zip`` (varied together) of a sweep config, runs each point with
:func:`djsb.simulate.run_simulate` into ``OUT/points/<k>/`` and writes ``OUT/sweep.csv`` in the
agreed format, then the six-scenario report of paper 000 (djsb/report/psp_scenarios.py). Once
``djsb sweep`` exists: ``djsb sweep CONFIG -o OUT && djsb psp-report OUT`` does the same.

Usage: .venv/bin/python bench/psp_scenarios.py configs/psp-scenarios.yaml -o runs/psp
"""

from __future__ import annotations

import argparse
import copy
import csv
import itertools
import json
from pathlib import Path
from typing import Any

import yaml

from djsb.report.psp_scenarios import write_psp_report
from djsb.simulate import run_simulate


def assign(config: dict[str, Any], dotted: str, value: Any) -> None:
    """Set the dotted key path (list indices allowed) of ``config`` to ``value``."""
    *parents, last = dotted.split(".")
    node: Any = config
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def points(sweep: dict[str, Any]) -> list[dict[str, Any]]:
    """Every point's assignments: the grid's product crossed with the zip's rows."""
    grid = sweep.get("grid", {})
    zipped = sweep.get("zip", {})
    rows = [dict(zip(zipped, values, strict=True)) for values in zip(*zipped.values(), strict=True)] or [{}]
    return [{**row, **dict(zip(grid, values, strict=True))}
            for row in rows for values in itertools.product(*grid.values())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    source = Path(args.config).resolve()
    base = yaml.safe_load(source.read_text())
    out = Path(args.output)
    rows = []
    for k, keys in enumerate(points(base.pop("sweep"))):
        config = copy.deepcopy(base)
        for dotted, value in keys.items():
            assign(config, dotted, value)
        swf = Path(config["workload"]["swf"])
        config["workload"]["swf"] = str(swf if swf.is_absolute() else source.parent / swf)
        point_dir = out / "points" / str(k)
        point_dir.mkdir(parents=True, exist_ok=True)
        (point_dir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        run_simulate(point_dir / "config.yaml", point_dir)
        metrics = json.loads((point_dir / "metrics.json").read_text())
        rows.append({"point": k, **keys, **{m: v for m, v in metrics.items() if not isinstance(v, dict)}})
    with open(out / "sweep.csv", "w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(write_psp_report(out))


if __name__ == "__main__":
    main()
