#!/usr/bin/env bash
# Build the djsb/slurm image without any registry: a Debian 12 base made by mmdebstrap and imported
# (djsb/bookworm-base), then the Dockerfile on top (classic builder, host network for apt), and the
# user-defined network djsb-net the container runs on (Slurm cannot resolve its host under
# --network none). Needs a running engine (bash .ci/docker.sh start). About a minute.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
# The base image uses this machine's own apt sources (a .sources or .list file), so it reaches
# exactly the Debian mirror the host is configured for.
SOURCES=${DJSB_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}
[[ -f $SOURCES ]] || SOURCES=/etc/apt/sources.list

if ! docker image inspect djsb/bookworm-base >/dev/null 2>&1; then
    command -v mmdebstrap >/dev/null || {
        apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q mmdebstrap
    }
    mmdebstrap --variant=minbase bookworm - "$SOURCES" | docker import - djsb/bookworm-base
fi
DOCKER_BUILDKIT=0 docker build --network host -t djsb/slurm .
docker network inspect djsb-net >/dev/null 2>&1 || docker network create djsb-net >/dev/null
echo "built djsb/slurm; run: docker run -d --name djsb-slurm --network djsb-net djsb/slurm"
