"""``djsb calibrate``: replay one workload on a real Slurm and on the model and measure the gap."""
