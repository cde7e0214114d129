#!/usr/bin/env bash
# A Docker engine on this machine, for the containerized Slurm mini-cluster (docker/README.md):
#   bash .ci/docker.sh install|start|stop|status
# start runs dockerd in the background with overlay2, falling back to vfs without iptables or
# the default bridge where overlay2 cannot work (nested containers); stop uses its pid file.
set -euo pipefail

PIDFILE=/run/djsb-dockerd.pid
LOG=/var/log/djsb-dockerd.log

log() { echo "docker.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

engine_up() { timeout 10 docker info >/dev/null 2>&1; }

do_install() {
    command -v dockerd >/dev/null && return 0
    [[ $(id -u) -eq 0 ]] || die "installing docker.io needs root"
    apt-get update -q
    # policy-rc.d: the package must not try to start the engine itself (no systemd here).
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io
    rm -f /usr/sbin/policy-rc.d
}

# try_start ARGS...: start dockerd with ARGS, wait up to 30 s for it to answer.
try_start() {
    (dockerd --pidfile "$PIDFILE" "$@" >>"$LOG" 2>&1 &)
    local i
    for i in $(seq 1 60); do
        engine_up && return 0
        [[ -s $PIDFILE ]] && ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null && break
        sleep 0.5
    done
    do_stop
    return 1
}

do_start() {
    if engine_up; then log "engine already running"; return 0; fi
    do_install
    [[ -s $PIDFILE ]] && ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null && rm -f "$PIDFILE"
    try_start --storage-driver overlay2 && { log "dockerd up (overlay2)"; return 0; }
    log "overlay2 failed (see $LOG); trying vfs without iptables and bridge"
    try_start --storage-driver vfs --iptables=false --bridge=none && { log "dockerd up (vfs)"; return 0; }
    die "dockerd did not start: see $LOG"
}

do_stop() {
    [[ -s $PIDFILE ]] || return 0
    local pid i
    pid=$(cat "$PIDFILE")
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$PIDFILE"
}

case ${1:-} in
    install) do_install ;;
    start) do_start ;;
    stop) do_stop ;;
    status) engine_up && docker info --format '{{.ServerVersion}} {{.Driver}}' ;;
    *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
