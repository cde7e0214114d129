"""reproduce.csv, setup.csv and report.html of a reproduction: the paper's claims, our measurements
and their computed verdicts side by side, the inputs apart, and our figures beside the numbers of the
paper's figures they redraw."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from djsb.report.html import render
from djsb.reproduce.checks import COLUMNS, SETUP_COLUMNS, Figure, Reproduction, Row

CLAIMS_FIGURE = Path("claims.png")
"""Every claim with a positive paper value: our interval and the rule's range over the paper's value."""
COLOURS = {"reproduced": "tab:green", "not reproduced": "tab:red", "inconclusive": "tab:orange",
           "explained": "tab:blue"}


def relative(row: Row) -> tuple[float, float, float, float, float] | None:
    """The row's measured value, interval and rule range over the paper's value (None when the
    paper gives no positive value or ours is not positive: they have no place on a log scale)."""
    paper = row.claim.paper_value
    values = (row.measured.value, row.measured.low, row.measured.high)
    if not (paper > 0 and all(v > 0 for v in values)):
        return None
    clip = (1e-3, 1e3)
    low = max(row.claim.rule.low / paper, clip[0])
    high = min(row.claim.rule.high / paper, clip[1])
    return values[0] / paper, values[1] / paper, values[2] / paper, low, high


def claims_figure(reproduction: Reproduction, path: Path) -> bool:
    """Draw each claim with a positive paper value on one axis: the paper's value at 1, the rule's
    range shaded, our interval and value coloured by the verdict; False when no claim has one."""
    verdicts = reproduction.verdicts()
    placed = [(row, scaled) for row in reproduction.rows if (scaled := relative(row)) is not None]
    if not placed:
        return False
    from djsb.plotting import plt, save

    fig, ax = plt.subplots(figsize=(9, 0.28 * len(placed) + 1.2))
    for y, (row, (value, low, high, rule_low, rule_high)) in enumerate(placed):
        ax.plot([rule_low, rule_high], [y, y], color="0.85", linewidth=7, solid_capstyle="butt")
        colour = COLOURS[verdicts[row.claim.item]]
        ax.plot([low, high], [y, y], color=colour, linewidth=1.5)
        ax.plot([value], [y], "o", color=colour, markersize=4)
    ax.axvline(1.0, color="k", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks(range(len(placed)), [row.claim.item for row, _ in placed], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ours / the paper's value (grey: the rule's range; line at 1: the paper)")
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    save(fig, path, dpi=100)
    return True


def write_table(rows: list[dict[str, str]], columns: Sequence[str], path: Path) -> Path:
    """One CSV of ``rows`` with ``columns`` in order."""
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_outputs(reproduction: Reproduction, out_dir: Path) -> Path:
    """Write ``out_dir/reproduce.csv`` (claims, :data:`~djsb.reproduce.checks.COLUMNS`),
    ``out_dir/setup.csv`` (inputs, not counted), ``out_dir/claims.png`` and ``out_dir/report.html``;
    return reproduce.csv."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = reproduction.csv_rows()
    setup = reproduction.setup_csv_rows()
    csv_path = write_table(rows, COLUMNS, out_dir / "reproduce.csv")
    write_table(setup, SETUP_COLUMNS, out_dir / "setup.csv")
    figures = [figure for figure in reproduction.figures if (out_dir / figure.path).is_file()]
    if claims_figure(reproduction, out_dir / CLAIMS_FIGURE):
        figures.insert(0, Figure(CLAIMS_FIGURE, f"the values of {reproduction.paper}",
                                 "each claim's interval (colour: its verdict) and rule over the paper's "
                                 "value"))
    render("reproduce.html.j2", out_dir / "report.html",
           title=f"Paper {reproduction.paper}: {reproduction.title}", setup=reproduction.setup, rows=rows,
           setup_rows=setup, counts=reproduction.tallies(), figures=figures)
    return csv_path
