"""Kinds of the core's events, numbered in the order they are handled at one instant: job ends,
the periodic main pass, the periodic backfill pass, submissions, the end of resume stalls, the
queued main pass of slurmctld's background loop (see djsb/model/simulation.py and
djsb/model/pass_timing.py)."""

END, MAIN_TICK, BF_TICK, SUBMIT, WAKE, QUEUED_TICK = 0, 1, 2, 3, 4, 5
