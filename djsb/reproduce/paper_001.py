"""Paper 001 (DJSB): the experiment of its fig. 3 (sec. 4.2, Tables 1-2: 1,024 CPUs, n_a 1/2/4/6,
three scenarios) on the simulated cluster, configs/paper-simulated.yaml, through the harness's
driver; the numbers sec. 4.4 reads off figs. 3 (a)-(c) beside ours.

The run takes seconds of virtual time either way, so ``full`` changes nothing: the config already
has the paper's size.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from djsb.clock import WallClock
from djsb.config import load_config, open_module
from djsb.harness.driver import Driver, planned_cells
from djsb.harness.rundir import RunDirectory, machine_metadata
from djsb.progress import Progress
from djsb.report import write_report
from djsb.reproduce.checks import Check, Figure, Reproduction, SameSide, Within
from djsb.reproduce.registry import CONFIGS, PAPERS
from djsb.transport import LocalTransport

CALIBRATED = "the config's timeslice_efficiency 0.955 was fitted to this number"
FIG_3 = (
    ("slowdown_s", "max", "dynamic", 1.20,
     "Fig. 3 (a) of 001: simulation slowdown, dynamic, at most (\"20%\")", ""),
    ("slowdown_a", "max", "oversubscription", 3.14,
     "Fig. 3 (b) of 001: analytics slowdown, oversubscription, at most (\"up to 214%\" loss)", CALIBRATED),
    ("slowdown_a", "max", "dynamic", 2.04,
     "Fig. 3 (b) of 001: analytics slowdown, dynamic (\"up to 104%\")", ""),
    ("dynamicity", "min", "oversubscription", 0.62,
     "Fig. 3 (c) of 001: dynamicity, oversubscription, lowest", ""),
    ("dynamicity", "min", "stopcont", 0.79, "Fig. 3 (c) of 001: dynamicity, stop&continue, lowest", ""),
    ("dynamicity", "min", "dynamic", 0.74, "Fig. 3 (c) of 001: dynamicity, dynamic, lowest", ""),
)
"""(column, extreme over n_a, scenario, the paper's value, item, the constant fitted to it if any) of
sec. 4.4's reading of fig. 3."""


def run_config(config_path: Path, run_path: Path) -> pd.DataFrame:
    """Run a config on its (in-process) job module into ``run_path``; return its summary table."""
    config = load_config(config_path)
    transport = LocalTransport()
    module = open_module(config, transport)
    meta = {**machine_metadata(), "config_file": str(config_path),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    run = RunDirectory.create(run_path, config.to_dict(), meta)
    bar = Progress("cells", len(planned_cells(config.general)), line_every=10.0)
    try:
        Driver(config, module, run, module.clock or WallClock(), transport, CONFIGS.parent / "apps" / "bin",
               run_path, progress=lambda line: None, cell_finished=lambda key: bar.advance()).run()
    finally:
        bar.close()
        module.close()
        run.release()
    return write_report(run_path, plots=True)


def checks_of(summary: pd.DataFrame) -> list[Check]:
    by = summary.groupby("scenario")
    checks = [Check(item, paper, float(getattr(by[column], extreme)()[scenario]), Within(1.25),
                    detail=f"{extreme} over n_a 1-6", fitted=fitted)
              for column, extreme, scenario, paper, item, fitted in FIG_3]
    worst = by["slowdown_s"].max()
    for other, paper in (("stopcont", 1.20), ("dynamic", 1.30)):
        checks.append(Check(f"Fig. 3 (a) of 001: simulation slowdown, oversubscription / {other}, worst n_a "
                            f"(\"up to {paper - 1:.0%} worse\")", paper,
                            float(worst["oversubscription"] / worst[other]), SameSide(1.0)))
    return checks


@PAPERS.register("001")
def reproduce_001(out_dir: Path, full: bool) -> Reproduction:
    """Run paper-simulated.yaml into ``out_dir/run`` and compare its summary with fig. 3."""
    summary = run_config(CONFIGS / "paper-simulated.yaml", out_dir / "run")
    return Reproduction("001", "DJSB: Dynamic Job Scheduling Benchmark",
                        "Fig. 3's setup (1,024 CPUs, n_a 1, 2, 4, 6, three samples) on the simulated "
                        "cluster (configs/paper-simulated.yaml); the run is in run/.", checks_of(summary),
                        [Figure(Path("run/figures/djsb.png"), "Fig. 3 (a)-(c) of 001",
                                "slowdowns of the simulation and the analytics, and dynamicity")])
