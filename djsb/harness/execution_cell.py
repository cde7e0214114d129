"""One cell of the execution stage (paper 001 sec. 4.1): a scenario, n_a and sample.

Start the simulation; once it runs, n_a times sleep U(sleep_min_time, sleep_max_time) and launch an
analytics on its resources; wait for everything. The scenarios differ only in what happens around each
analytics, which each scenario owns (djsb/scenarios/, one file each): oversubscription does nothing,
stopcont suspends the simulation and resumes it when no analytics runs any more, dynamic shrinks it
through its control file and grows it back.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from djsb.clock import Clock
from djsb.config import Config, GeneralConfig
from djsb.errors import SubmitRejected, one_line
from djsb.harness.commands import work_arguments
from djsb.harness.reference import Reference
from djsb.harness.rundir import CellKey
from djsb.harness.stop import StopRequest
from djsb.harness.tracked import Tracked
from djsb.harness.tracker import CellFailed, JobTracker
from djsb.scenarios import CellState
from djsb.scenarios import scenario as get_scenario


class CellSimulation:
    """The simulation job of a cell as its scenario acts on it (a scenarios.SimulationHandle)."""

    def __init__(self, tracker: JobTracker, job: Tracked) -> None:
        self.tracker = tracker
        self.job = job

    @property
    def suspended(self) -> bool:
        return self.job.suspended_since is not None

    def suspend(self) -> None:
        self.tracker.suspend(self.job)

    def resume(self) -> None:
        self.tracker.resume(self.job)

    def set_threads(self, threads: int) -> None:
        self.tracker.setup.set_threads(self.job.request.name, threads)


def analytics_gaps(general: GeneralConfig, scenario: str, n_a: int, sample: int) -> list[float]:
    """The sleep before each of the cell's n_a analytics, U(sleep_min_time, sleep_max_time), drawn
    from a generator seeded by the run's seed and the cell (the same in every run of the config)."""
    rng = random.Random(f"{general.seed}/{scenario}/{n_a}/{sample}")
    return [rng.uniform(general.sleep_min_time, general.sleep_max_time) for _ in range(n_a)]


@dataclass(eq=False)
class ExecutionCell:
    """Runs execution cells with the run's jobs (``tracker``), clock and stop request."""

    config: Config
    tracker: JobTracker
    clock: Clock
    stop: StopRequest
    progress: Callable[[str], None]

    def run(self, key: CellKey, reference: Reference) -> None:
        """Submit the cell's simulation, then its analytics at their times, until every job ended."""
        _, name, n_a, sample = key
        general = self.config.general
        scenario = get_scenario(name)
        sim_app, ana_app = self.config.simulation, self.config.analytics
        gaps = analytics_gaps(general, name, n_a, sample)
        self.progress(f"execution stage: {name}, n_a={n_a}, sample {sample + 1}/{general.num_of_samples}")
        tracker = self.tracker

        sim = tracker.submit("simulation", 0, key, work_arguments(sim_app.exec_time,
                                                                   reference.iterations["simulation"]),
                             iterations=reference.iterations["simulation"])
        handle = CellSimulation(tracker, sim)
        tracker.wait_until(lambda: sim.seen_start is not None or not tracker.is_live(sim), key, reference)

        analytics: list[Tracked] = []
        next_submit = self.clock.now() + gaps[0]

        def unfinished() -> bool:
            return tracker.is_live(sim) or any(tracker.is_live(a) for a in analytics)

        def state() -> CellState:
            return CellState(sim_app, ana_app, sum(1 for a in analytics if tracker.is_live(a)))

        while unfinished() or len(analytics) < n_a:
            ended = tracker.poll(key, reference)
            if any(job.app == "analytics" for job in ended) and tracker.is_live(sim):
                scenario.after_analytics(handle, state())
            if len(analytics) < n_a and self.clock.now() >= next_submit:
                # placed on the simulation only if the poll just made shows it has not ended
                sim_alive = tracker.is_live(sim)
                if sim_alive:
                    scenario.before_analytics(handle, state())
                job = self.submit_analytics(len(analytics), key, reference, sim if sim_alive else None,
                                            scenario.analytics_oversubscribes)
                analytics.append(job)
                if len(analytics) < n_a:
                    next_submit = self.clock.now() + gaps[len(analytics)]
            pause = general.poll_interval
            if len(analytics) < n_a:
                pause = min(pause, max(0.0, next_submit - self.clock.now()))
            self.stop.wait(pause)
        alone = [index + 1 for index, job in enumerate(analytics) if not job.shared_with_sim]
        if alone:
            # eq. (3)-(8) of 001 weigh a simulation that hosted its analytics: without that, the
            # cell measured nothing of its scenario
            raise CellFailed(f"the simulation ended before analytics {', '.join(map(str, alone))} started, "
                             "so they did not share its resources; give the simulation a longer exec_time "
                             "or shorten sleep_max_time")

    def submit_analytics(self, index: int, key: CellKey, reference: Reference, sim: Tracked | None,
                         oversubscribe: bool) -> Tracked:
        """Submit an analytics of the cell, on the simulation's nodes when ``sim`` runs. A refused
        submission is retried once after a fresh poll (placed anew, or anywhere if the simulation
        ended meanwhile); refused again, the cell fails."""
        work = work_arguments(self.config.analytics.exec_time, reference.iterations["analytics"])
        for attempt in (1, 2):
            try:
                job = self.tracker.submit("analytics", index, key, work,
                                          colocate_with=sim.job_id if sim else None,
                                          oversubscribe=oversubscribe,
                                          iterations=reference.iterations["analytics"])
                break
            except SubmitRejected as exc:
                if attempt == 2:
                    raise CellFailed(one_line(str(exc))) from None
                self.progress(f"warning: {one_line(str(exc))}; trying again after a fresh poll")
                self.tracker.poll(key, reference)
                if sim is not None and not self.tracker.is_live(sim):
                    sim = None
        job.shared_with_sim = sim is not None
        return job
