"""Paper 001 (DJSB): the experiments of its figs. 3-5 (sec. 4.2, Tables 1-2, sec. 4.4) on the simulated
cluster, through the harness's driver; the numbers sec. 4.4 reads off the figures beside ours.

- Fig. 3: configs/paper-simulated.yaml: 64 nodes (1,024 CPUs), the simulation 1 GiB per task
  (4 GiB per node), the analytics 50 MiB per task.
- Fig. 4: the same with 4 GiB per simulation task (16 GiB per node, Table 2's 4 GiB), run for its
  figure and for fig. 5's comparison; its rows are measured: djsb-stream on this machine with the
  simulation holding more than half of its memory (bench/bench_half_memory.py, read from
  ``HALF_MEMORY`` with the run's provenance), the model having no term for the memory fraction.
- Fig. 5: fig. 4's memory on 32 nodes (512 CPUs; the analytics half of it).

The rate model's footprint parameters (working-set curve, time-slicing efficiency, run-to-run
spread) come from the config's ``footprint`` file, measured with djsb-stream by
bench/bench_footprint.py, never from these figures; the footprint of each job is its config's
memory per task. Each run takes seconds of virtual time, so ``full`` changes nothing: the configs
already have the paper's sizes.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from djsb.clock import WallClock
from djsb.config import Config, load_config, open_module
from djsb.footprint import FootprintParameters, read_footprint
from djsb.harness.driver import Driver, planned_cells
from djsb.harness.rundir import RunDirectory, machine_metadata
from djsb.progress import Progress
from djsb.report import write_report
from djsb.reproduce.checks import (
    Claim,
    Figure,
    Measured,
    Reproduction,
    Row,
    Rule,
    SetupRow,
    direction,
    factor,
    interval,
)
from djsb.reproduce.half_memory import HalfMemory, Sample, read_half_memory
from djsb.reproduce.papers import CONFIGS, PAPERS
from djsb.transport import LocalTransport

GIB = 2**30


@dataclass(frozen=True)
class Setup:
    """One figure's experiment: fig. 3's config on ``nodes`` nodes, ``memory_per_task`` per
    simulation task."""

    figure: str
    nodes: int
    memory_per_task: int

    def config(self, base: Config, *, noise: bool) -> Config:
        """``base`` (fig. 3's config) scaled to this setup: both jobs keep their tasks per node.
        Without ``noise`` every job does exactly its work (work_cv 0): the model's prediction."""
        options = {**base.job_module.options, "nodes": self.nodes, **({} if noise else {"work_cv": 0.0})}
        scale = self.nodes / base.job_module.options["nodes"]
        sim, ana = base.simulation, base.analytics
        tasks = round(sim.total_tasks * scale)
        ana_tasks = round(ana.total_tasks * scale)
        return dataclasses.replace(
            base,
            simulation=dataclasses.replace(sim, total_tasks=tasks,
                                           total_memory=tasks * self.memory_per_task),
            analytics=dataclasses.replace(ana, total_tasks=ana_tasks,
                                          total_memory=ana.total_memory // ana.total_tasks * ana_tasks),
            job_module=dataclasses.replace(base.job_module, options=options))


SETUPS = (Setup("fig3", 64, 1 * GIB), Setup("fig4", 64, 4 * GIB), Setup("fig5", 32, 4 * GIB))
"""Figs. 3-5 of 001 (their captions: system size, memory per node requested by the simulation)."""

FIG_3 = (
    ("slowdown_s", "max", "dynamic", 1.20,
     "Fig. 3 (a) of 001: simulation slowdown, dynamic, at most (\"20%\")"),
    ("slowdown_a", "max", "oversubscription", 3.14,
     "Fig. 3 (b) of 001: analytics slowdown, oversubscription, at most (\"up to 214%\" loss)"),
    ("slowdown_a", "max", "dynamic", 2.04,
     "Fig. 3 (b) of 001: analytics slowdown, dynamic (\"up to 104%\")"),
    ("dynamicity", "min", "oversubscription", 0.62,
     "Fig. 3 (c) of 001: dynamicity, oversubscription, lowest"),
    ("dynamicity", "min", "stopcont", 0.79,
     "Fig. 3 (c) of 001: dynamicity, stop&continue, lowest"),
    ("dynamicity", "min", "dynamic", 0.74, "Fig. 3 (c) of 001: dynamicity, dynamic, lowest"),
)
"""(column, extreme over n_a, scenario, the paper's value, item) of sec. 4.4's reading of fig. 3."""

FIG_4_DYNAMICITY = (("oversubscription", 0.52), ("stopcont", 0.63), ("dynamic", 0.49))
"""Sec. 4.4 on fig. 4: "The dynamicity goes as low as 52%, 63% and 49%"."""
FIG_4_SIMULATION = 1.2
"""Sec. 4.4 on fig. 4 (a): the simulation "at most 20% more impacted when its demand for memory is
higher"."""
FIG_4_ANALYTICS_LOSS = 2.0
"""Sec. 4.4 on fig. 4 (b): the analytics suffers "almost a double performance loss comparing to the
previous set of experiments"."""
FIG_4_LOSS_SCENARIOS = ("oversubscription", "dynamic")
"""The scenarios whose fig. 3 analytics loss is large enough to double (214 % and 104 %); beside a
stopped simulation fig. 3's loss is near 0, so a ratio of losses there measures noise."""
HALF_MEMORY = CONFIGS / "half-memory-epyc-2core.csv"
"""Fig. 4's condition measured on this machine by bench/bench_half_memory.py (djsb-stream)."""

SIM_OVERSUB_VS_DYNAMIC = 1.30
"""Sec. 4.4 on fig. 3 (a): oversubscription is "up to 30% worse than in case of dynamic scenario"."""


def run_config(config: Config, run_path: Path, plots: bool = True) -> pd.DataFrame:
    """Run a config on its (in-process) job module into ``run_path``; return its summary table
    (``plots``: with the run's figures)."""
    transport = LocalTransport()
    module = open_module(config, transport)
    meta = {**machine_metadata(), "config_file": config.source,
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
    return write_report(run_path, plots=plots)


def extreme_row(summary: pd.DataFrame, column: str, how: str, scenario: str) -> pd.Series:
    """The row (n_a) of ``scenario`` where ``column`` is at its max or min."""
    rows = summary[summary.scenario == scenario]
    return rows.loc[getattr(rows[column], f"idx{how}")()]


def extreme(summary: pd.DataFrame, column: str, how: str, scenario: str) -> float:
    """The max or min over n_a of ``column`` in ``scenario``."""
    return float(extreme_row(summary, column, how, scenario)[column])


def sampled(samples: pd.DataFrame, column: str, how: str, scenario: str) -> Measured:
    """The samples' mean at ``scenario``'s extreme cell (over n_a) and its 95 % t interval."""
    row = extreme_row(samples, column, how, scenario)
    value, half = float(row[column]), float(row[f"{column}_ci95"])
    if math.isnan(half):
        return Measured.single(value, f"one sample at n_a {row.n_a:g}")
    return Measured(value, value - half, value + half,
                    f"mean of {row.samples:g} samples at n_a {row.n_a:g} (the {how} over n_a), "
                    "95 % t interval")


def loss_factor(paper: float, times: float, reason: str) -> Rule:
    """A slowdown whose loss (slowdown - 1) is within a factor ``times`` of the paper's loss: a band
    around the slowdown itself would accept no loss at all for a slowdown of 1.2."""
    loss = paper - 1
    return Rule(1 + loss / times, 1 + loss * times,
                f"the loss (slowdown - 1) within a factor {times:g} of the "
                f"paper's {loss:.2f}; {reason}")


def dynamicity(w_s: float, w_a: float, slowdown_s: float, slowdown_a: float) -> float:
    """Eq. (2) of 001."""
    return math.exp(-(w_s * math.log(slowdown_s) + w_a * math.log(slowdown_a)) / (w_s + w_a))


def oversubscription_evidence(summary: pd.DataFrame, measured: FootprintParameters) -> str:
    """Why fig. 3's oversubscription dynamicity is higher than the paper's: the simulation's weight
    and the paper's own simulation slowdown, with the single-node share measured here."""
    worst = summary[summary.scenario == "oversubscription"].sort_values("n_a").iloc[-1]
    paper_s = FIG_3[0][3] * SIM_OVERSUB_VS_DYNAMIC
    implied = dynamicity(worst.w_s, worst.w_a, paper_s, FIG_3[1][3])
    overlap = worst.n_a * worst.t_a
    rate = 1 - (paper_s - 1) * (worst.t_s / worst.slowdown_s) / overlap
    share = measured.measured("slowdown_sim_oversub")
    largest = max(share)
    weight = worst.w_s / (worst.w_s + worst.w_a)
    return (f"the simulation carries {weight:.0%} of eq. (2)'s weight (eqs. (3)-(4), n_a {worst.n_a:g}), "
            f"so dynamicity follows its slowdown: ours {worst.slowdown_s:.2f}, the paper's "
            f"{FIG_3[0][3]:g} x {SIM_OVERSUB_VS_DYNAMIC:g} = {paper_s:.2f} (fig. 3 (a)); with it and the "
            f"paper's 3.14 eq. (2) gives {implied:.2f}. The paper's simulation then ran at {rate:.2f} of "
            f"its speed during the {overlap:.0f} s it shared, where one node's bandwidth share gives "
            f"16/24 = 0.67 and djsb-stream measured {1 / share[largest][0]:.2f} (2 threads sharing 2 "
            f"cores with a 1-thread analytics, {largest / GIB:g} GiB, CV {share[largest][1]:.0%}); the "
            "rest is a 64-node effect one machine cannot measure (MPI barriers over independently "
            "time-sliced nodes)")


def bandwidth_evidence(measured: FootprintParameters) -> str:
    """Why oversubscription and the dynamic scenario cost the simulation the same in the model."""
    efficiency = measured.timeslice_efficiency
    cv = measured.measured("timeslice_efficiency")[0][1]
    return ("on a bandwidth-bound node the simulation loses exactly the bytes the analytics streams, "
            "whichever way they share: 8 of 24 threads' share for 3 x 10 s or 8 of 16 for 2 x 10 s "
            "both cost 10 s of its work per analytics (times the cache gain), so only a time-slicing "
            f"loss can make oversubscription worse, and djsb-stream measured none: efficiency "
            f"{efficiency:g} (the median of the paired runs, at least 1, CV {cv:.0%}); the paper's "
            "30% is the 64-node loss of its fig. 3 (c) row")


def scale_ratio(fig5: pd.DataFrame, fig4: pd.DataFrame, scenario: str) -> float:
    """The lowest dynamicity of ``scenario`` on fig. 5's setup over fig. 4's."""
    return extreme(fig5, "dynamicity", "min", scenario) / extreme(fig4, "dynamicity", "min", scenario)


READ_OFF = "read off 001's plot of 64 nodes"


def share(half: HalfMemory, footprint: int) -> str:
    """A footprint and its fraction of the node (with the analytics, as sec. 4.4 counts it)."""
    sample = next(iter(half.at(footprint).values()))
    return f"{footprint / GIB:g} GiB ({sample.fraction:.0%} of the node)"


def mean_at(half: HalfMemory, footprint: int, metric: Callable[[Sample], float]) -> float:
    """The rounds' mean of ``metric`` at ``footprint``."""
    return statistics.fmean(half.values(footprint, metric))


def fig4_rows(half: HalfMemory) -> list[Row]:
    """Sec. 4.4's reading of fig. 4 at each footprint above half of the node's memory, from the
    bench's rounds (djsb/reproduce/half_memory.py): the mean over the rounds and its t interval,
    a comparison with fig. 3's fraction paired round by round."""
    small = half.small
    low, high = half.loads()
    context = (f"djsb-stream on one node of this machine (2-thread simulation, 1-thread 100 MiB "
               f"analytics), {Path(half.source).name}; load average {low:.1f}-{high:.1f} during the rounds")
    rows = []
    for large in half.large:
        here, there = share(half, large), share(half, small)
        paired = f"rounds, each the ratio of {here} to {there} measured in the same round"
        rows.append(Row(
            Claim(f"simulation slowdown, oversubscription, {here} / {there}",
                  "Fig. 4 (a) of 001, sec. 4.4: \"at most 20% more impacted\"",
                  "the simulation's time beside the analytics over its time alone (one node), above "
                  "half of the node's memory over fig. 3's fraction", FIG_4_SIMULATION,
                  interval(1.0, FIG_4_SIMULATION, "more impacted, by at most 20 %: the paper's words")),
            Measured.t_interval(half.paired(large, lambda s: s.slowdown_s_oversub), paired),
            note=(f"slowdown {mean_at(half, large, lambda s: s.slowdown_s_oversub):.3g} at {here}, "
                  f"{mean_at(half, small, lambda s: s.slowdown_s_oversub):.3g} at {there} "
                  f"(means); {context}")))
        for scenario in FIG_4_LOSS_SCENARIOS:
            def loss(sample: Sample, scenario: str = scenario) -> float:
                return sample.slowdown_a(scenario) - 1
            rows.append(Row(
                Claim(f"analytics loss, {scenario}, {here} / {there}",
                      "Fig. 4 (b) of 001, sec. 4.4: \"almost a double performance loss\"",
                      "the analytics' loss (slowdown - 1, one node), above half of the node's memory "
                      "over fig. 3's fraction", FIG_4_ANALYTICS_LOSS,
                      factor(FIG_4_ANALYTICS_LOSS, 1.25, "\"almost a double\"")),
                Measured.t_interval(half.paired(large, loss), paired),
                note=(f"slowdown {1 + mean_at(half, large, loss):.3g} at {here}, "
                      f"{1 + mean_at(half, small, loss):.3g} at {there} (means); {context}")))
        for scenario, paper in FIG_4_DYNAMICITY:
            def lowest(sample: Sample, scenario: str = scenario) -> float:
                return sample.lowest_dynamicity(scenario)
            rows.append(Row(
                Claim(fig_4_item(scenario, here),
                      "Fig. 4 (c) of 001, sec. 4.4: \"as low as 52%, 63% and 49%\"",
                      f"eq. (2) of 001 from one node's measured slowdowns on Table 2's timeline, "
                      f"{scenario}, min over n_a 1-6", paper, factor(paper, 1.25, READ_OFF)),
                Measured.t_interval(half.values(large, lowest), "rounds"),
                note=f"{mean_at(half, small, lowest):.3g} at {there} (mean); {context}"))
    return rows


def fig_3_item(entry: tuple[str, str, str, float, str]) -> str:
    """The item of a claim of :data:`FIG_3`: its text after the figure's name."""
    return entry[4].split(" of 001: ")[1]


def fig_4_item(scenario: str, footprint: str) -> str:
    """The item of fig. 4 (c)'s claim on ``scenario``'s lowest dynamicity at ``footprint`` (as
    :func:`share` words it)."""
    return f"dynamicity, {scenario}, lowest, {footprint}"


def paper_lines(rows: list[Row]) -> dict[str, dict[str, list[tuple[str, float]]]]:
    """The paper's values of figs. 3-4's claims in ``rows``, by figure, for the run's three-panel
    figure: by metric, (scenario, the claim's paper value)."""
    claims = {row.claim.item: row.claim for row in rows}
    places = [("fig3", entry[0], entry[2], fig_3_item(entry)) for entry in FIG_3]
    for scenario, _ in FIG_4_DYNAMICITY:  # the paper's value is the same at every measured footprint
        item = next((item for item in claims if item.startswith(fig_4_item(scenario, ""))), None)
        if item is not None:
            places.append(("fig4", "dynamicity", scenario, item))
    lines: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for figure, metric, scenario, item in places:
        lines.setdefault(figure, {}).setdefault(metric, []).append((scenario, claims[item].paper_value))
    return lines


def rows_of(predicted: dict[str, pd.DataFrame], samples: dict[str, pd.DataFrame],
            measured: FootprintParameters, half: HalfMemory) -> tuple[list[Row], list[SetupRow]]:
    """Sec. 4.4's readings of figs. 3-5: for fig. 3 the samples with the measured noise (their
    mean and interval) where the figure gives a value, the model's prediction where it gives a
    ratio of figures; for fig. 4 the djsb-stream rounds at more than half of this machine's memory
    (``half``); what the model cannot vary (the scale) is setup."""
    fig3, fig4, fig5 = predicted["fig3"], predicted["fig4"], predicted["fig5"]
    rows = []
    for entry in FIG_3:
        column, how, scenario, paper, item = entry
        figure, what = item.split(" of 001: ")[0], fig_3_item(entry)
        rule = (loss_factor(paper, 1.5, READ_OFF) if column.startswith("slowdown")
                else factor(paper, 1.25, READ_OFF))
        note = f"prediction (no noise): {extreme(fig3, column, how, scenario):.3g}"
        if (column, scenario) == ("dynamicity", "oversubscription"):
            note += "; " + oversubscription_evidence(fig3, measured)
        rows.append(Row(Claim(what, f"{figure} of 001, sec. 4.4", f"{column}, {scenario}, {how} over n_a 1-6",
                              paper, rule), sampled(samples["fig3"], column, how, scenario), note=note))
    worst = fig3.groupby("scenario")["slowdown_s"].max()
    prediction = "the model's prediction (no noise), deterministic"
    for other, paper in (("stopcont", 1.20), ("dynamic", SIM_OVERSUB_VS_DYNAMIC)):
        rows.append(Row(Claim(f"simulation slowdown, oversubscription / {other}",
                              f"Fig. 3 (a) of 001, sec. 4.4: \"up to {paper - 1:.0%} worse\"",
                              f"max over n_a of the simulation slowdown, oversubscription over {other}",
                              paper,
                              direction(paper, 1.0, "oversubscription worse, its size read off a plot")),
                        Measured.single(float(worst["oversubscription"] / worst[other]), prediction),
                        note=bandwidth_evidence(measured) if other == "dynamic" else ""))
    setup = [SetupRow("fig. 4's memory measured with djsb-stream",
                      f"{Path(half.source).name} (bench/bench_half_memory.py)",
                      f"{len({s.round for s in half.samples})} rounds", "", half.provenance)]
    setup += [SetupRow(f"dynamicity, {scenario}, fig. 5 / fig. 4 (512 / 1,024 CPUs)",
                       "Fig. 5 of 001: \"remains the same\"",
                       f"{scale_ratio(fig5, fig4, scenario):.4g}",
                       "1", "the model has no term that depends on the number of nodes")
              for scenario, _ in FIG_4_DYNAMICITY]
    return rows + fig4_rows(half), setup


@PAPERS.register("001")
def reproduce_001(out_dir: Path, full: bool) -> Reproduction:
    """Run figs. 3-5's setups into ``out_dir/fig3`` .. ``fig5`` (with the measured noise, the paper's
    3 samples) and ``out_dir/fig3-prediction`` .. (without); compare with sec. 4.4."""
    base = load_config(CONFIGS / "paper-simulated.yaml")
    half = read_half_memory(HALF_MEMORY)
    samples = {s.figure: run_config(s.config(base, noise=True), out_dir / s.figure, plots=False)
               for s in SETUPS}
    predicted = {s.figure: run_config(s.config(base, noise=False), out_dir / f"{s.figure}-prediction")
                 for s in SETUPS}
    measured = base.job_module.options["footprint"]
    rows, setup = rows_of(predicted, samples, read_footprint(Path(measured)), half)
    lines = paper_lines(rows)
    from djsb.report.plots import plot_summary  # matplotlib is imported only when drawing

    for s in SETUPS:
        run = out_dir / s.figure
        plot_summary(samples[s.figure], run / "figures", run.name, pd.read_csv(run / "samples.csv"),
                     lines.get(s.figure))
    return Reproduction(
        "001", "DJSB: Dynamic Job Scheduling Benchmark",
        "Figs. 3-5's setups (1,024 CPUs with 4 and 16 GiB of simulation memory per node, 512 CPUs "
        "with 16 GiB; n_a 1, 2, 4, 6, three samples) on the simulated cluster "
        f"(configs/paper-simulated.yaml), its footprint parameters measured by bench/bench_footprint.py "
        f"({measured}). Each figure runs twice, with the same seed: with each job's work drawn with the "
        "measured run-to-run spread (fig3/, fig4/, fig5/: the samples and their intervals) and without "
        "(figN-prediction/: the model's prediction, used for the ratios of figures). Fig. 4's rows are "
        f"measured on one node of this machine with djsb-stream (configs/{HALF_MEMORY.name}, "
        "bench/bench_half_memory.py).",
        rows,
        [Figure(Path(f"{s.figure}/figures/djsb.png"), f"Fig. {s.figure[-1]} (a)-(c) of 001",
                "slowdowns of the simulation and the analytics, and dynamicity (dashed: the values sec. "
                "4.4 reads off the paper's figure)") for s in SETUPS],
        setup)
