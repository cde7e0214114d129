"""report.html of a real run and of a real simulate experiment, opened in headless Chromium.

The page marks each <img> with its load state once the page has loaded (a script in the shared
base template), so the DOM Chromium dumps tells whether every figure really displayed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from djsb.cli import main
from djsb.harness.rundir import machine_metadata
from djsb.report.html import human_size, with_human_sizes
from djsb.simulate import run_simulate

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian package "
                                                               "chromium; .ci/run installs it)")


class Images(HTMLParser):
    """The src and data-load-state of every <img>, and the figures status line."""

    def __init__(self) -> None:
        super().__init__()
        self.states: dict[str, str] = {}
        self.in_status = False
        self.status = ""
        self.visible_notes = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "img":
            self.states[values["src"] or ""] = values.get("data-load-state") or ""
        if values.get("id") == "figures-status":
            self.in_status = True
        if values.get("class") == "broken" and "hidden" not in values:
            self.visible_notes += 1

    def handle_data(self, data: str) -> None:
        if self.in_status:
            self.status += data

    def handle_endtag(self, tag: str) -> None:
        self.in_status = False


def opened_in_chromium(page: Path) -> Images:
    assert CHROMIUM is not None
    done = subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    images = Images()
    images.feed(done.stdout)
    return images


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real small run on the simulated cluster (virtual time: about a second), with its figures."""
    base = tmp_path_factory.mktemp("report")
    config = base / "quick.yaml"
    config.write_text((REPO / "configs" / "simulated-quick.yaml").read_text().replace("plots: false", "plots: true"))
    assert main(["run", str(config), "-o", str(base / "run")]) == 0
    return base / "run"


def test_run_report_holds_summary_with_ci_metadata_and_config(small_run: Path) -> None:
    page = (small_run / "report.html").read_text()
    summary = pd.read_csv(small_run / "summary.csv")
    assert len(summary) == 6  # 3 scenarios x n_a in (1, 2)
    for _, row in summary.iterrows():
        # every cell's dynamicity and slowdowns appear as mean ± 95% half-width, as summary.csv has them;
        # the mean alone where summary.csv has no CI (fewer than 3 samples: this config has 2)
        assert row["samples"] == 2
        for metric in ("slowdown_s", "slowdown_a", "dynamicity"):
            assert pd.isna(row[metric + "_ci95"])
            assert f"<td>{row[metric]:.3f}</td>" in page
    assert "<td>stop&amp;continue</td>" in page  # the scenario's label, escaped
    assert f"<td>{machine_metadata()['hostname']}</td>" in page
    assert "<th>djsb_version</th>" in page and "<th>cpu_model</th>" in page and "<th>os</th>" in page
    assert "num_of_dyn_analysis:" in page  # the resolved config
    # sizes for people: config.yaml holds 4294967296 and 209715200 bytes, 4 x 1024^3 and 200 x 1024^2
    assert "total_memory: 4GiB" in page and "total_memory: 200MiB" in page and "4294967296" not in page
    assert re.search(r"<th>memory</th><td>[0-9.]+GiB</td>", page)  # meta.json's memory_bytes, in GiB


@needs_chromium
def test_every_run_figure_loads_in_chromium_and_a_missing_one_shows(small_run: Path) -> None:
    images = opened_in_chromium(small_run / "report.html")
    assert images.states == {"figures/djsb.png": "loaded"}  # each figure once: the three panels together
    assert images.status == "" and images.visible_notes == 0  # nothing to say when every figure loaded
    # the same check sees a figure that is gone, and the page says so to the reader
    (small_run / "figures" / "djsb.png").rename(small_run / "djsb.png")
    try:
        images = opened_in_chromium(small_run / "report.html")
    finally:
        (small_run / "djsb.png").rename(small_run / "figures" / "djsb.png")
    assert images.states["figures/djsb.png"] == "broken"
    assert images.status == "1 of 1 figures could not be loaded" and images.visible_notes == 1


def test_djsb_report_rewrites_the_page(small_run: Path) -> None:
    (small_run / "report.html").unlink()
    assert main(["report", str(small_run)]) == 0
    assert 'src="figures/djsb.png"' in (small_run / "report.html").read_text()


# Three SWF records (18 fields each) for a 2-core cluster: job 1 fits; job 2 asks for 4 processors
# (rejected by the model: more than the partition holds); job 3 has no processors (skipped by the reader).
SWF = """\
1 0 -1 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1
2 5 -1 10 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1
3 6 -1 10 -1 -1 -1 -1 20 -1 1 1 1 -1 -1 -1 -1 -1
"""
EXPERIMENT = """\
workload:
  swf: tiny.swf
cluster:
  nodes: [{count: 2, cores: 1}]
"""


def test_simulate_report_lists_skipped_and_rejected_records(tmp_path: Path) -> None:
    (tmp_path / "tiny.swf").write_text(SWF)
    (tmp_path / "experiment.yaml").write_text(EXPERIMENT)
    out = run_simulate(tmp_path / "experiment.yaml", tmp_path / "out")
    page = (out / "report.html").read_text()
    assert "1 trace record(s) skipped when reading the workload, 1 job(s)\nrejected" in page
    assert "<td>no_processors</td><td>1</td>" in page and "<td>3</td><td>no_processors</td>" in page  # line 3 of tiny.swf
    assert "<td>2</td><td>4 CPUs exceed partition batch&#39;s size</td>" in page
    assert "<th>jobs</th><td>1</td>" in page  # only job 1 ran
    assert "swf: tiny.swf" in page
    skipped = pd.read_csv(out / "skipped.csv")
    assert skipped[["line", "reason"]].values.tolist() == [[3, "no_processors"]]
    if CHROMIUM is not None:
        images = opened_in_chromium(out / "report.html")
        assert images.states == {"wait_ecdf.png": "loaded", "queue_utilisation.png": "loaded"}


def test_human_sizes_are_exact_where_they_can_be() -> None:
    assert human_size(4 * 1024**3) == "4GiB"
    assert human_size(200 * 1024**2) == "200MiB"
    assert human_size(3 * 1024**3 // 2) == "1536MiB"  # 1.5 GiB is a whole number of MiB
    assert human_size(16 * 1000**3) == "14.9GiB"  # 16e9 / 2^30 = 14.901
    assert human_size(1000) == "1000B"
    assert human_size(1536) == "1.5KiB"
    options = {"memory_per_node": 16 * 1024**3, "memory_bandwidth_per_node": 40, "cores_per_node": 8}
    assert with_human_sizes({"job_module": {"options": options}, "analytics": {"total_memory": 48 * 1024**2}}) == {
        "job_module": {"options": {"memory_per_node": "16GiB", "memory_bandwidth_per_node": 40, "cores_per_node": 8}},
        "analytics": {"total_memory": "48MiB"}}
