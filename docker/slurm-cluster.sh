#!/usr/bin/env bash
# DJSB Slurm mini-cluster: several virtual nodes (`slurmd -N nX`, one Port each) on this one host.
#
# One script, used three ways: natively in CI and by users without Docker (through .ci/slurm.sh),
# and as the entrypoint of the Docker image (docker/Dockerfile). Subcommands:
#
#   install     apt-get install Slurm 22.05 and munge (plus MariaDB/slurmdbd with DJSB_SLURM_ACCOUNTING=1)
#   start       write slurm.conf, start munged, slurmctld and the slurmds; wait for idle nodes
#   stop        cancel every job, then stop the daemons this script started, by PID
#   restart-ctld  stop and start slurmctld only (the harness must survive this mid-run)
#   stop-ctld   stop slurmctld only (an outage; always follow with start-ctld)
#   start-ctld  start slurmctld again and wait until it answers
#   status      print the controller and node states; exit 1 when the cluster is not up
#   settings    print the nodes, CPUs, memory and accounting a start would use
#   entrypoint  start, then wait until SIGTERM/SIGINT and stop (the container's PID 1)
#
# Environment (defaults in brackets):
#   DJSB_SLURM_DIR         state, spool, pid and log files [/var/lib/djsb-slurm]
#   DJSB_SLURM_NODES       number of virtual nodes n1..nN [4]
#   DJSB_SLURM_CPUS        CPUs per virtual node [2]
#   DJSB_SLURM_MEMORY      RealMemory per virtual node, MiB [2048]
#   DJSB_SLURM_PORT        slurmd ports are PORT+1..PORT+N [17000]
#   DJSB_SLURM_ACCOUNTING  1: slurmdbd on a private MariaDB, so sacct works [0]
#   DJSB_SLURM_WAIT        seconds to wait for idle nodes before failing [90]
#   DJSB_SLURM_GPUS        GPUs per virtual node: empty, none; N, N untyped GPUs; TYPE:N, N of that type
#                          (a100:2). For placement only: their device files are stand-ins nothing opens
#                          (write_gres_conf). Set but empty turns them off; a change needs stop, start [empty]
#
# A second cluster beside the first (its own slurmctld, slurmds, slurmdbd and MariaDB; munged is
# shared) takes its own values of these (.ci/slurm-second.env holds the test suite's):
#   DJSB_SLURM_NODE_PREFIX node names PREFIX1..PREFIXN [n]
#   DJSB_SLURM_CTLD_PORT   SlurmctldPort [6817]
#   DJSB_SLURM_DBD_PORT    slurmdbd's DbdPort [6819]
#   DJSB_SLURM_FIRST_JOB_ID  FirstJobId, so that the two clusters' job ids never meet [1]
#   DJSB_SLURM_LINK        where the clients' default slurm.conf points to this cluster's; empty: nowhere,
#                          the clients of this cluster set SLURM_CONF=DIR/etc/slurm.conf [/etc/slurm/slurm.conf]
#   DJSB_SLURM_NICE        niceness of its daemons and so of its jobs (root only; negative: Slurm's
#                          own timing is kept when other work loads the machine) [0]
#
# Start and stop are idempotent: every daemon has a pid file under DJSB_SLURM_DIR/run, a running
# daemon is left alone by start, and stop only signals the PIDs in those files. A start without
# DJSB_SLURM_NODES, DJSB_SLURM_CPUS, DJSB_SLURM_MEMORY, DJSB_SLURM_ACCOUNTING or DJSB_SLURM_GPUS keeps
# what the slurm.conf this script last wrote says (a test that restarts a killed slurmd must not shrink a
# 16-node cluster to 4 or drop its accounting); without one, the defaults.
set -euo pipefail

DIR=${DJSB_SLURM_DIR:-/var/lib/djsb-slurm}
PREVIOUS="$DIR/etc/slurm.conf"
PREFIX=${DJSB_SLURM_NODE_PREFIX:-n}
previous() {  # previous SED_EXPR DEFAULT: what the last slurm.conf says, else DEFAULT
    local found=""
    [[ -f $PREVIOUS ]] && found=$(sed -n "$1" "$PREVIOUS" | tail -n 1)
    echo "${found:-$2}"
}
NODES=${DJSB_SLURM_NODES:-$(previous "s/^NodeName=$PREFIX\\([0-9][0-9]*\\) .*/\\1/p" 4)}
CPUS=${DJSB_SLURM_CPUS:-$(previous 's/^NodeName=DEFAULT CPUs=\([0-9][0-9]*\) .*/\1/p' 2)}
MEMORY=${DJSB_SLURM_MEMORY:-$(previous 's/^NodeName=DEFAULT .*RealMemory=\([0-9][0-9]*\).*/\1/p' 2048)}
PORT=${DJSB_SLURM_PORT:-17000}
ACCOUNTING=${DJSB_SLURM_ACCOUNTING:-$(previous 's|^AccountingStorageType=accounting_storage/slurmdbd$|1|p' 0)}
# Unset: what the last slurm.conf says; set, even to nothing, wins (DJSB_SLURM_GPUS= turns them off).
GPUS=${DJSB_SLURM_GPUS-$(previous 's/^NodeName=DEFAULT .* Gres=gpu:\([^ ]*\) .*/\1/p' "")}
WAIT=${DJSB_SLURM_WAIT:-90}
CTLD_PORT=${DJSB_SLURM_CTLD_PORT:-6817}
DBD_PORT=${DJSB_SLURM_DBD_PORT:-6819}
FIRST_JOB_ID=${DJSB_SLURM_FIRST_JOB_ID:-1}
LINK=${DJSB_SLURM_LINK-/etc/slurm/slurm.conf}
NICE=${DJSB_SLURM_NICE:-0}
# Every daemon and client this script runs reads this cluster's own files.
export SLURM_CONF="$DIR/etc/slurm.conf"
MARK="# Written by djsb slurm-cluster.sh"
DB_SOCKET="$DIR/run/mysqld.sock"

log() { echo "slurm-cluster: $*" >&2; }
die() { log "error: $*"; exit 1; }

# A bad DJSB_SLURM_GPUS is the user's input: one line naming it, exit 2 (before anything is written).
if [[ -n $GPUS && ! $GPUS =~ ^([a-z][a-z0-9_]*:)?[1-9][0-9]{0,2}$ ]]; then
    echo "slurm-cluster: error: DJSB_SLURM_GPUS='$GPUS' is not N or TYPE:N (2, a100:2)" >&2
    exit 2
fi

node_names() { seq -f "$PREFIX%g" 1 "$NODES"; }

# daemon COMMAND...: start a daemon at the cluster's niceness.
daemon() { nice -n "$NICE" "$@"; }

# pid_alive FILE: the PID in FILE is a running process.
pid_alive() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop_pids FILE...: TERM the PIDs in the FILEs at once, KILL what is left after 10 s, remove the FILEs.
stop_pids() {
    local file pids=() i
    for file in "$@"; do
        pid_alive "$file" && pids+=("$(cat "$file")")
    done
    if ((${#pids[@]})); then
        kill -TERM "${pids[@]}" 2>/dev/null || true
        for i in $(seq 1 100); do kill -0 "${pids[@]}" 2>/dev/null || break; sleep 0.1; done
        for i in "${pids[@]}"; do kill -KILL "$i" 2>/dev/null || true; done
    fi
    rm -f "$@"
}

do_install() {
    local pkgs=(slurmctld slurmd slurm-client munge)
    [[ $ACCOUNTING == 1 ]] && pkgs+=(slurmdbd mariadb-server)
    local missing=()
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    [[ ${#missing[@]} -eq 0 ]] && { log "packages already installed"; return 0; }
    [[ $(id -u) -eq 0 ]] || die "installing ${missing[*]} needs root"
    # Debian's daemons try to start through invoke-rc.d; we start them ourselves.
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    rm -f /usr/sbin/policy-rc.d
}

write_conf() {
    local host accounting gres="" gres_types=""
    host=$(hostname)
    if [[ -n $GPUS ]]; then
        gres=" Gres=gpu:$GPUS"
        gres_types="
GresTypes=gpu"
    fi
    if [[ $ACCOUNTING == 1 ]]; then
        accounting="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT"
        # sacct's AllocTRES names the GPUs only when gres/gpu is an accounted TRES.
        [[ -n $GPUS ]] && accounting+="
AccountingStorageTRES=gres/gpu"
    else
        accounting="AccountingStorageType=accounting_storage/none"
    fi
    mkdir -p "$DIR"/{state,run,log,etc} /etc/slurm
    for n in $(node_names); do mkdir -p "$DIR/spool/$n"; done
    cat > "$DIR/etc/slurm.conf" <<EOF
$MARK: the DJSB mini-cluster ($NODES virtual nodes on $host).
ClusterName=djsb
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$CTLD_PORT
FirstJobId=$FIRST_JOB_ID
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
# No cgroups here (containers, CI): processes are tracked through their parents, tasks not pinned.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=2
JobAcctGatherParams=OverMemoryKill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_interval=2,bf_interval=5
DependencyParameters=kill_invalid_depend
PreemptType=preempt/none
MinJobAge=86400
MaxJobCount=100000
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
$accounting
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
MessageTimeout=10
InactiveLimit=0
KillWait=5
MpiDefault=none
# A job runs at the niceness of the sbatch that submitted it, not at the daemons' (DJSB_SLURM_NICE).
PropagatePrioProcess=1
SwitchType=switch/none
MailProg=/bin/true$gres_types
NodeName=DEFAULT CPUs=$CPUS RealMemory=$MEMORY$gres State=UNKNOWN
EOF
    local i=1
    for n in $(node_names); do
        echo "NodeName=$n NodeHostname=$host NodeAddr=127.0.0.1 Port=$((PORT + i))" >> "$DIR/etc/slurm.conf"
        i=$((i + 1))
    done
    write_gres_conf
    cat >> "$DIR/etc/slurm.conf" <<EOF
# shared: every job may share CPUs with up to 3 others; oversub: only jobs asking --oversubscribe.
PartitionName=shared Nodes=ALL Default=YES OverSubscribe=FORCE:4 MaxTime=INFINITE State=UP
PartitionName=oversub Nodes=ALL OverSubscribe=YES:4 MaxTime=INFINITE State=UP
PartitionName=exclusive Nodes=ALL OverSubscribe=EXCLUSIVE MaxTime=INFINITE State=UP
EOF
    # The clients (sbatch, squeue, ...) read /etc/slurm/slurm.conf; never clobber a foreign one.
    [[ -n $LINK ]] || return 0
    if [[ -e $LINK && ! -L $LINK ]] && ! grep -q "^$MARK" "$LINK"; then
        die "$LINK exists and was not written by this script; move it away or run in Docker"
    fi
    ln -sfn "$DIR/etc/slurm.conf" "$LINK"
}

# write_gres_conf: the nodes' GPUs (slurmd reads the gres.conf beside slurm.conf). Slurm 22.05 drops
# every GPU without File= after loading gres.conf (gres_node_config_load, gres.c: "Removing file-less
# GPU"), and File= must name character or block devices (_set_gres_device_desc, gres_common.c): so
# the GPUs are device nodes of /dev/null's numbers under DIR/dev, shared by the virtual nodes (one
# host), which nothing opens (task/none, no cgroup device limits). No GPUs: no gres.conf.
# docker/README.md ("GPUs") says what 22.05 took and refused.
write_gres_conf() {
    local type="" count=$GPUS i
    if [[ -z $GPUS ]]; then rm -f "$DIR/etc/gres.conf"; return 0; fi
    if [[ $GPUS == *:* ]]; then type=" Type=${GPUS%%:*}"; count=${GPUS##*:}; fi
    mkdir -p "$DIR/dev"
    for ((i = 0; i < count; i++)); do
        [[ -c $DIR/dev/gpu$i ]] || mknod "$DIR/dev/gpu$i" c 1 3
    done
    cat > "$DIR/etc/gres.conf" <<EOF
$MARK: $count GPU(s) per node, stand-ins for devices (nothing detects or opens them).
AutoDetect=off
NodeName=$PREFIX[1-$NODES] Name=gpu$type File=$DIR/dev/gpu[0-$((count - 1))]
EOF
}

# munged is shared by every mini-cluster of this host: each one running is a file of MUNGE_USERS
# (its DIR, slashes as %), and MUNGE_USERS/started says a mini-cluster started munged. The last one
# to stop stops munged if one of them started it, never one another cluster still signs with
# (DJSB_MUNGE_USERS and DJSB_MUNGED_PID move the registry and munged's pid file: tests).
MUNGE_USERS=${DJSB_MUNGE_USERS:-/run/djsb-munge-users}
MUNGED_PID=${DJSB_MUNGED_PID:-/run/munge/munged.pid}
munge_user() { echo "$MUNGE_USERS/${DIR//\//%}"; }

start_munge() {
    mkdir -p "$MUNGE_USERS" && touch "$(munge_user)"
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then return 0; fi
    if [[ ! -s /etc/munge/munge.key ]]; then
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    fi
    chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    chmod 755 /run/munge
    runuser -u munge -- munged
    touch "$MUNGE_USERS/started"
    local i
    for i in $(seq 1 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0; sleep 0.1; done
    die "munged did not start (see /var/log/munge/munged.log)"
}

start_slurmdbd() {
    [[ $ACCOUNTING == 1 ]] || return 0
    if ! pid_alive "$DIR/run/mysqld.pid"; then
        if [[ ! -d $DIR/mysql/mysql ]]; then
            mkdir -p "$DIR/mysql"
            mariadb-install-db --user=root --datadir="$DIR/mysql" --auth-root-authentication-method=socket \
                >"$DIR/log/mariadb-install.log" 2>&1
        fi
        rm -f "$DB_SOCKET"   # a stale socket of a killed server would pass the wait below
        (mariadbd --user=root --datadir="$DIR/mysql" --socket="$DB_SOCKET" --skip-networking \
            --pid-file="$DIR/run/mysqld.pid" --log-error="$DIR/log/mariadb.log" >>"$DIR/log/mariadb.log" 2>&1 &)
        local i
        for i in $(seq 1 150); do mariadb --socket="$DB_SOCKET" -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.2; done
        mariadb --socket="$DB_SOCKET" -e 'SELECT 1' >/dev/null 2>&1 || die "MariaDB did not start (see $DIR/log/mariadb.log)"
        mariadb --socket="$DB_SOCKET" -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;"
    fi
    cat > "$DIR/etc/slurmdbd.conf" <<EOF
$MARK
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageLoc=slurm_acct_db
StorageUser=root
StoragePort=0
EOF
    chmod 600 "$DIR/etc/slurmdbd.conf"
    # slurmdbd reads the slurmdbd.conf beside SLURM_CONF, and reaches MariaDB through the socket
    # MYSQL_UNIX_PORT names (MariaDB's client library).
    if ! pid_alive "$DIR/run/slurmdbd.pid"; then MYSQL_UNIX_PORT="$DB_SOCKET" daemon slurmdbd; fi
    local i
    for i in $(seq 1 100); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.2; done
    sacctmgr -n list cluster format=cluster | grep -qw djsb || sacctmgr -i add cluster djsb >/dev/null
}

# repair_ctld_pid: a slurmctld started while one already ran wrote its PID to the pid file before it
# failed to bind its port, so the file may name a dead process while the real slurmctld (the one
# holding the port, the oldest) runs on: write that one's PID back, so that stop finds it.
repair_ctld_pid() {
    local pid
    pid_alive "$DIR/run/slurmctld.pid" && return 0
    pid=$(our_pids -f "^slurmctld -f $SLURM_CONF\$" | head -n 1)
    [[ -n $pid ]] && echo "$pid" > "$DIR/run/slurmctld.pid"
    return 0
}

# our_pids PGREP-ARGS...: the matching PIDs, oldest first, of this PID namespace only: a container's
# daemons (the djsb/slurm image's slurmctld, say) are visible from the host and are not ours.
our_pids() {
    local pid ns
    ns=$(readlink /proc/self/ns/pid)
    for pid in $(pgrep "$@" | sort -n); do
        [[ $(readlink "/proc/$pid/ns/pid" 2>/dev/null) == "$ns" ]] && echo "$pid"
    done
    return 0
}

# kill_stray_slurmds: slurmds of our node names that no pid file names (left by an earlier start
# whose pid files were removed) hold their node's port, so a new one could not register.
kill_stray_slurmds() {
    local n pid
    for n in $(node_names); do
        pid_alive "$DIR/run/slurmd-$n.pid" && continue
        for pid in $(our_pids -f "^slurmd -N $n\$"); do kill -KILL "$pid" 2>/dev/null || true; done
    done
}

start_slurmctld() { repair_ctld_pid; pid_alive "$DIR/run/slurmctld.pid" || daemon slurmctld -f "$SLURM_CONF"; }

# start_slurmds: start the missing slurmds, remembering which and when (STARTED, STARTED_AT), so that
# wait_idle does not take a node state restored from StateSaveLocation for a registration.
STARTED=()
STARTED_AT=0
start_slurmds() {
    STARTED_AT=$(date +%s)
    kill_stray_slurmds
    for n in $(node_names); do
        pid_alive "$DIR/run/slurmd-$n.pid" || { daemon slurmd -N "$n"; STARTED+=("$n"); }
    done
}

# registered: every slurmd started by start_slurmds registered since.
registered() {
    local n t
    for n in "${STARTED[@]}"; do
        t=$(SLURM_TIME_FORMAT=%s scontrol -o show node "$n" 2>/dev/null \
            | grep -o 'SlurmdStartTime=[0-9]*' | cut -d= -f2)
        [[ -n $t ]] && ((t >= STARTED_AT - 1)) || return 1
    done
}

# wait_idle: bounded wait for the controller and every node to be usable; down nodes left over
# from an earlier run (a test that set one down) are resumed once their slurmd has registered.
# wait_ctld: until slurmctld answers (start-ctld: its nodes may still be completing the jobs that
# ended while it was down, for minutes; they are not waited for).
wait_ctld() {
    local deadline=$((SECONDS + WAIT))
    until scontrol ping 2>/dev/null | grep -q 'is UP'; do
        ((SECONDS < deadline)) || die "slurmctld not answering after ${WAIT}s (see $DIR/log/slurmctld.log)"
        sleep 0.5
    done
}

wait_idle() {
    local deadline=$((SECONDS + WAIT)) states resumed=0
    wait_ctld
    while :; do
        states=$(sinfo -h -N -p shared -o '%N %t' 2>/dev/null || true)
        if [[ $(grep -cE ' (idle|mix|alloc)$' <<<"$states") -ge $NODES ]] && registered; then return 0; fi
        if ((resumed == 0)) && grep -qE ' (down|drain|drng)$' <<<"$states"; then
            scontrol update nodename="$PREFIX[1-$NODES]" state=resume 2>/dev/null || true
            resumed=1
        fi
        ((SECONDS < deadline)) || die "nodes not idle after ${WAIT}s: $(tr '\n' ' ' <<<"$states")"
        sleep 0.5
    done
}

do_start() {
    [[ $(id -u) -eq 0 ]] || die "starting the mini-cluster needs root (munged, slurmd as root)"
    command -v slurmctld >/dev/null || die "Slurm is not installed: run '$0 install' first"
    local t0=$SECONDS
    write_conf
    start_munge
    start_slurmdbd
    start_slurmctld
    start_slurmds
    wait_idle
    log "up: $NODES nodes x $CPUS CPUs, $MEMORY MiB${GPUS:+, GPUs $GPUS} each, in $((SECONDS - t0)) s (state in $DIR)"
}

do_stop() {
    if pid_alive "$DIR/run/slurmctld.pid"; then
        local jobs i
        jobs=$(squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')
        if [[ -n ${jobs// } ]]; then
            # shellcheck disable=SC2086
            scancel $jobs 2>/dev/null || true
            for i in $(seq 1 50); do
                [[ -z $(squeue -h -o %A 2>/dev/null) ]] && break
                sleep 0.2
            done
        fi
    fi
    local files=("$DIR/run/slurmctld.pid" "$DIR/run/slurmdbd.pid")
    for n in $(node_names); do files+=("$DIR/run/slurmd-$n.pid"); done
    stop_pids "${files[@]}"
    stop_pids "$DIR/run/mysqld.pid"
    rm -f "$(munge_user)"
    if [[ -e $MUNGE_USERS/started ]] && [[ -z $(find "$MUNGE_USERS" -mindepth 1 ! -name started -print -quit) ]]
    then
        stop_pids "$MUNGED_PID"
        rm -f "$MUNGE_USERS/started"
    fi
    log "stopped"
}

do_restart_ctld() {
    repair_ctld_pid
    stop_pids "$DIR/run/slurmctld.pid"
    start_slurmctld
    wait_idle
}

do_status() {
    scontrol ping 2>/dev/null | grep -q 'is UP' || { log "slurmctld is not answering"; return 1; }
    sinfo -N -o '%N %P %t %c %m'
}

do_entrypoint() {
    do_start
    trap 'do_stop; exit 0' TERM INT
    sleep infinity &
    wait $!
}

case ${1:-} in
    install) do_install ;;
    start) do_start ;;
    stop) do_stop ;;
    restart-ctld) do_restart_ctld ;;
    stop-ctld) repair_ctld_pid; stop_pids "$DIR/run/slurmctld.pid" ;;
    start-ctld) start_slurmctld; wait_ctld ;;
    status) do_status ;;
    settings) echo "nodes=$NODES cpus=$CPUS memory=$MEMORY accounting=$ACCOUNTING gpus=${GPUS:-none}" ;;
    entrypoint) do_install && do_entrypoint ;;
    *) echo "usage: $0 install|start|stop|restart-ctld|stop-ctld|start-ctld|status|settings|entrypoint" >&2
       exit 2 ;;
esac
