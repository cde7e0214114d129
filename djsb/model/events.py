"""Kinds of the core's events, numbered in the order they are handled at one instant: job ends,
the periodic main pass, the periodic backfill pass, submissions, the end of resume stalls (see
djsb/model/simulation.py)."""

END, MAIN_TICK, BF_TICK, SUBMIT, WAKE = 0, 1, 2, 3, 4
