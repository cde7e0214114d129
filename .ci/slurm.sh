#!/usr/bin/env bash
# The DJSB Slurm mini-cluster, natively: `bash .ci/slurm.sh install|start|stop|restart-ctld|status`.
# The script itself lives in docker/ because it is also the Docker image's entrypoint.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../docker/slurm-cluster.sh" "$@"
