"""Kinds of the core's events, numbered in the order they are handled at one instant.

At one instant: job ends (kind 0), then the periodic main pass (1), the periodic backfill pass (2),
then submissions (3), then the end of resume stalls (4); the queued main pass of slurmctld's
background loop (5) runs where the periodic one does. Node events (6, :mod:`djsb.model.node_events`),
requeued jobs becoming eligible again (7), the ends of reservation windows (8,
:mod:`djsb.model.reservations`) and the openings of the windows jobs wait for (9,
:mod:`djsb.model.reserved_jobs`) are applied after the ends, before the passes they run; so is a run of
the decay thread that may free a job a TRES-minutes usage holds (10, :mod:`djsb.model.tres_minutes`),
whose passes are the next periodic ones (the decay thread runs no pass), and so is a wake of the gang
scheduler's timeslicer (11, :mod:`djsb.model.gang`), which runs no pass. Within a
kind, by job id; new progress rates last. An END whose ``seq`` is not its job's ``end_seq`` is stale
(the job's rate changed, it was suspended or it ended otherwise) and is skipped. So a replay is
deterministic (see djsb/model/simulation.py and djsb/model/pass_timing.py)."""

(END, MAIN_TICK, BF_TICK, SUBMIT, WAKE, QUEUED_TICK, NODE, REQUEUE, RESV_END, RESV_BEGIN,
 USAGE_TICK, GANG_TICK) = range(12)
