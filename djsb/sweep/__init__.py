"""``djsb sweep``: one experiment config run at every point of a parameter grid.

- :mod:`djsb.sweep.spec` reads the config's ``sweep:`` section and expands it into points;
- :mod:`djsb.sweep.runners` names what runs one point (``djsb simulate`` by default);
- :mod:`djsb.sweep.point` runs one point into its directory, complete or not at all;
- :mod:`djsb.sweep.sweep_dir` is the output directory: finished points, the manifest, sweep.csv;
- :mod:`djsb.sweep.local` runs the points in worker processes, :mod:`djsb.sweep.slurm_array` as
  one Slurm job array; :mod:`djsb.sweep.run` runs a whole sweep (``djsb sweep``, ``djsb pool``
  and the reproductions call it);
- :mod:`djsb.sweep.pool_command` is ``djsb pool``: one pool run, or the sweep its config holds.
"""
