"""``djsb history``: a site's recorded Slurm history replayed on the model of its own
configuration and measured against the record (``replay``: the inputs, the start split, the notes,
the replay, its errors, the what-if), the priorities the record implies (``recorded_priorities``),
and replays of one history side by side (``compare``). The site's files are read through
:mod:`djsb.slurmsite`."""
