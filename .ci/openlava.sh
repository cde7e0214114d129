#!/usr/bin/env bash
# An OpenLava 4.0 cluster (the open-source LSF clone) on this machine, for the LSF job module's live tests.
#
#   bash .ci/openlava.sh deps      apt-get install the build dependencies (skipped when all are there)
#   bash .ci/openlava.sh install   deps, then build OpenLava from the vendored tarball into PREFIX (about
#                                  2 minutes; skipped when PREFIX/sbin/lim exists)
#   bash .ci/openlava.sh start     the cluster: HOSTS virtual hosts of this machine's CPUs each, queues
#                                  normal and shared; waits until every host accepts jobs
#   bash .ci/openlava.sh stop      kill every job, then every process of every virtual host, and remove the
#                                  hosts' namespaces and the bridge (whatever state they are in)
#   bash .ci/openlava.sh status    exit 0 when mbatchd answers and every host is ok
#   bash .ci/openlava.sh smoke     submit a job (as root) and wait until it is DONE
#   bash .ci/openlava.sh env       print the environment a client needs (eval it: PATH, LSF_ENVDIR)
#   bash .ci/openlava.sh login USER  make USER's shells find the cluster, ssh's remote commands included:
#                                  the first line of USER's ~/.bashrc sources DIR/etc/profile.lsf
#
# The sources: ../shared/vendor/openlava-4.0dev4-69891d8.tar.gz beside the repository (its README.md says
# why the build needs libtirpc and -fcommon on Debian 12); the build happens here, at CI time.
#
# Virtual hosts: OpenLava's daemons bind fixed ports on every address and know their host by
# gethostname(), so each virtual host is a network namespace (ip netns, a veth on the bridge BRIDGE) and
# each daemon a UTS namespace of its own (unshare --uts) named after its host. OpenLava's own host table
# ($LSF_CONFDIR/hosts) names the hosts' addresses, and names this machine (the bridge's address) as a
# client host: the commands run here reach the master through LSF_SERVER_HOSTS. A host's daemons (lim,
# which starts pim; res; sbatchd, which starts mbatchd on the master) and its jobs are exactly the
# processes of its network namespace (ip netns pids), which is how they are stopped, by PID.
# mbatchd starts only after every lim reported its CPUs (else bhosts shows MAX 1 until badmin reconfig).
#
# Jobs run as their submitter. The tests and the harness run as root in CI, so lsf.conf has
# LSF_ROOT_REX=all (OpenLava refuses root's jobs without it); the cluster is private to this machine.
#
# A user's environment: DIR/etc/profile.lsf (written by start) sets PATH, LSF_ENVDIR and the other LSF_*
# directories, as IBM LSF's LSF_CONFDIR/profile.lsf does. `login USER` sources it from USER's ~/.bashrc,
# above Debian's "not interactive: return": bash reads ~/.bashrc for the command of `ssh host COMMAND`
# (a non-interactive, non-login shell, which reads no profile), which is how the LSF module's
# commands run on a login node (job_module.ssh).
#
# Finished jobs: bjobs lists a finished job for CLEAN_PERIOD seconds (DJSB_OPENLAVA_CLEAN_PERIOD [30]; LSF's
# default is an hour), then forgets it; bhist -l still reads it from mbatchd's events. The short
# period lets a test see a job forgotten. `start` on a running cluster whose mbatchd may hold other lsb.*
# files (DIR/applied: their digest when it last read them) reconfigures it (badmin reconfig on the
# master: mbatchd restarts, and job ids jump by 100).
#
# Environment: DJSB_OPENLAVA_PREFIX [/opt/djsb-openlava] (the build), DJSB_OPENLAVA_DIR
# [/var/lib/djsb-openlava] (configuration, logs, mbatchd's work directory), DJSB_OPENLAVA_HOSTS [3],
# DJSB_OPENLAVA_NET [10.77.0] (a /24 for the bridge: .1 this machine, .11 onwards the hosts).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TARBALL=${DJSB_OPENLAVA_TARBALL:-$HERE/../../shared/vendor/openlava-4.0dev4-69891d8.tar.gz}
PREFIX=${DJSB_OPENLAVA_PREFIX:-/opt/djsb-openlava}
DIR=${DJSB_OPENLAVA_DIR:-/var/lib/djsb-openlava}
NHOSTS=${DJSB_OPENLAVA_HOSTS:-3}
NET=${DJSB_OPENLAVA_NET:-10.77.0}
BRIDGE=djsb-lavabr
CLUSTER=djsb
CLEAN_PERIOD=${DJSB_OPENLAVA_CLEAN_PERIOD:-30}
WAIT=${DJSB_OPENLAVA_WAIT:-90}  # seconds to wait for the daemons to come up or go down
CLIENT=$(hostname)
NPROC=$(nproc)  # each virtual host has this machine's CPUs (its lim counts them)
DEPS=(build-essential autoconf automake libtool bison flex tcl-dev libncurses-dev libtirpc-dev iproute2 util-linux)

export LSF_ENVDIR=$DIR/etc PATH=$PREFIX/bin:$PATH

die() { echo "openlava.sh: $*" >&2; exit 1; }

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds, or fail clearly
    local deadline=$((SECONDS + $1)) what=$2
    shift 2
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || die "$what not reached within ${WAIT}s (logs: $DIR/log)"
        sleep 0.5
    done
}

host() { echo "djsb-lava$1"; }       # the name of virtual host I (1..NHOSTS); host 1 is the master
address() { echo "$NET.$((10 + $1))"; }
hosts() { local i; for ((i = 1; i <= NHOSTS; i++)); do host "$i"; done; }

deps() {
    dpkg -s "${DEPS[@]}" >/dev/null 2>&1 && return 0
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${DEPS[@]}" >/dev/null
}

install() {
    deps
    if [[ -x $PREFIX/sbin/lim ]]; then echo "openlava.sh: already built in $PREFIX"; return 0; fi
    [[ -f $TARBALL ]] || die "no $TARBALL (the vendored sources, see ../shared/vendor/README.md)"
    local build
    build=$(mktemp -d)
    trap 'rm -rf "$build"' RETURN
    tar -xzf "$TARBALL" -C "$build"
    (
        cd "$build/openlava"
        sh bootstrap.sh
        ./configure --prefix="$PREFIX" CPPFLAGS=-I/usr/include/tirpc CFLAGS=-fcommon LIBS=-ltirpc
        make -j"$(nproc)"
        make install
    ) > "$build.log" 2>&1 || { tail -n 30 "$build.log" >&2; die "build failed (log: $build.log)"; }
    rm -f "$build.log"
    echo "openlava.sh: built OpenLava into $PREFIX"
}

configure() {
    mkdir -p "$DIR/etc" "$DIR/log" "$DIR/work/logdir"  # logdir: mbatchd's lsb.events
    local i
    cat > "$DIR/etc/lsf.conf" <<EOF
LSF_SERVERDIR=$PREFIX/sbin
LSF_BINDIR=$PREFIX/bin
LSF_LIBDIR=$PREFIX/lib
LSF_ENVDIR=$DIR/etc
LSF_CONFDIR=$DIR/etc
LSB_CONFDIR=$DIR/etc
LSB_SHAREDIR=$DIR/work
LSF_LOGDIR=$DIR/log
LSF_LOG_MASK=LOG_WARNING
LSF_LIM_PORT=16322
LSF_RES_PORT=16323
LSB_MBD_PORT=16324
LSB_SBD_PORT=16325
LSF_AUTH=eauth
LSF_ROOT_REX=all
LSF_SERVER_HOSTS="$(hosts | tr '\n' ' ' | sed 's/ $//')"
EOF
    {
        echo "$NET.1 $CLIENT"
        for ((i = 1; i <= NHOSTS; i++)); do echo "$(address "$i") $(host "$i")"; done
    } > "$DIR/etc/hosts"
    cat > "$DIR/etc/lsf.shared" <<EOF
Begin Cluster
ClusterName
$CLUSTER
End Cluster

Begin HostType
TYPENAME
linux
End HostType

Begin HostModel
MODELNAME  CPUFACTOR   ARCHITECTURE
generic    100         (x86_64)
End HostModel

Begin Resource
RESOURCENAME  TYPE    INTERVAL INCREASING  DESCRIPTION
   cs         Boolean ()       ()          (Compute server)
End Resource
EOF
    {
        printf 'Begin ClusterAdmins\nAdministrators = root\nEnd ClusterAdmins\n\n'
        printf 'Begin Host\nHOSTNAME model type server r1m RESOURCES\n'
        for ((i = 1; i <= NHOSTS; i++)); do echo "$(host "$i") ! linux 1 - (cs)"; done
        echo "$CLIENT ! linux 0 - ()"
        printf 'End Host\n'
    } > "$DIR/etc/lsf.cluster.$CLUSTER"
    # Two queues on every host, each with as many slots per host as the host has CPUs (HJOB_LIMIT),
    # the host twice that (MXJ): normal for the jobs, shared for the ones that share a job's CPUs on
    # purpose (the LSF module's oversubscribe_queue: a stopped job keeps its slots, as in Grid Engine).
    cat > "$DIR/etc/lsb.hosts" <<EOF
Begin Host
HOST_NAME MXJ          JL/U r1m pg ls tmp DISPATCH_WINDOW
default   $((2 * NPROC)) ()   ()  () () ()  ()
End Host
EOF
    # Schedule each second (the harness polls once a second); jobs run at the submitter's niceness.
    cat > "$DIR/etc/lsb.params" <<EOF
Begin Parameters
DEFAULT_QUEUE = normal
MBD_SLEEP_TIME = 1
SBD_SLEEP_TIME = 1
JOB_ACCEPT_INTERVAL = 0
CLEAN_PERIOD = $CLEAN_PERIOD
End Parameters
EOF
    local queue
    for queue in normal shared; do
        printf 'Begin Queue\nQUEUE_NAME = %s\nPRIORITY = 30\nHJOB_LIMIT = %s\nEnd Queue\n\n' "$queue" "$NPROC"
    done > "$DIR/etc/lsb.queues"
    printf 'Begin User\nUSER_NAME MAX_JOBS JL/P\ndefault () ()\nEnd User\n' > "$DIR/etc/lsb.users"
    : > "$DIR/etc/lsb.resources"
    # A user's environment, as IBM LSF's LSF_CONFDIR/profile.lsf (sh syntax; sourced, so no exit).
    cat > "$DIR/etc/profile.lsf" <<EOF
# OpenLava's environment for the cluster of .ci/openlava.sh: . $DIR/etc/profile.lsf
LSF_ENVDIR=$DIR/etc
LSF_BINDIR=$PREFIX/bin
LSF_SERVERDIR=$PREFIX/sbin
LSF_LIBDIR=$PREFIX/lib
case ":\$PATH:" in *":$PREFIX/bin:"*) ;; *) PATH=$PREFIX/bin:\$PATH ;; esac
export LSF_ENVDIR LSF_BINDIR LSF_SERVERDIR LSF_LIBDIR PATH
EOF
}

# Docker sets iptables' FORWARD policy to DROP and loads br_netfilter, which then filters the frames
# bridged between the hosts' veths: the hosts no longer reach each other (each lim elects itself
# master). One rule lets the bridge's own traffic through; stop removes it.
FORWARD_RULE=(FORWARD -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT)

network() {  # the bridge, and each host's namespace with its veth on it (idempotent)
    local i ns
    ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
    if command -v iptables >/dev/null && ! iptables -C "${FORWARD_RULE[@]}" 2>/dev/null; then
        iptables -I "${FORWARD_RULE[@]}" 2>/dev/null || true  # no iptables here: nothing filters either
    fi
    ip addr show dev "$BRIDGE" | grep -q "inet $NET.1/" || ip addr add "$NET.1/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
    for ((i = 1; i <= NHOSTS; i++)); do
        ns=$(host "$i")
        ip netns list | grep -qw "^$ns" || ip netns add "$ns"
        if ! ip link show "lava$i" >/dev/null 2>&1; then
            ip link add "lava$i" type veth peer name eth0 netns "$ns"
            ip link set "lava$i" master "$BRIDGE"
            ip -n "$ns" addr add "$(address "$i")/24" dev eth0
        fi
        ip link set "lava$i" up
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
    done
}

daemon() {  # daemon I NAME: start PREFIX/sbin/NAME on host I (it daemonizes itself)
    local name
    name=$(host "$1")
    ip netns exec "$name" unshare --uts sh -c 'hostname "$1" && exec "$2"' sh "$name" "$PREFIX/sbin/$2" \
        >> "$DIR/log/$2.$name.out" 2>&1 < /dev/null
}

on_master() {  # on_master COMMAND...: run COMMAND as if on the master host (its namespaces)
    ip netns exec "$(host 1)" unshare --uts sh -c 'hostname "$1" && shift && exec "$@"' sh "$(host 1)" "$@"
}

running() {  # running I NAME: the PIDs of the processes called NAME in host I's namespace
    local pid
    for pid in $(ip netns pids "$(host "$1")" 2>/dev/null); do
        [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$2" ]] && echo "$pid"
    done
    return 0
}

lims_reported() {  # every host's lim reported its CPUs to the master
    local shown
    shown=$(timeout 5 lshosts -w 2>/dev/null) || return 1
    [[ $(awk 'NR > 1 && $5 ~ /^[0-9]+$/ && $8 == "Yes"' <<<"$shown" | wc -l) -eq $NHOSTS ]]
}

hosts_ok() {  # mbatchd answers and every host accepts jobs with all its CPUs as slots
    local shown
    shown=$(timeout 5 bhosts -w 2>/dev/null) || return 1
    [[ $(awk -v max=$((2 * NPROC)) 'NR > 1 && $2 == "ok" && $4 == max' <<<"$shown" | wc -l) -eq $NHOSTS ]]
}

start() {
    [[ -x $PREFIX/sbin/lim ]] || die "OpenLava is not built: run bash .ci/openlava.sh install"
    ((NHOSTS >= 1)) || die "DJSB_OPENLAVA_HOSTS: at least 1 host, got $NHOSTS"
    local i daemon was_running
    was_running=$(running 1 mbatchd)
    configure
    network
    for ((i = 1; i <= NHOSTS; i++)); do [[ -n $(running "$i" lim) ]] || daemon "$i" lim; done
    wait_for "$WAIT" "every lim reporting its CPUs (lshosts)" lims_reported
    for ((i = 1; i <= NHOSTS; i++)); do
        for daemon in res sbatchd; do [[ -n $(running "$i" "$daemon") ]] || daemon "$i" "$daemon"; done
    done
    wait_for "$WAIT" "every host ok in bhosts" hosts_ok
    # mbatchd read the lsb.* files when it started; one already running may hold older ones
    if [[ -n $was_running && $(batch_config) != "$(cat "$DIR/applied" 2>/dev/null)" ]]; then reconfigure; fi
    batch_config > "$DIR/applied"
    echo "openlava.sh: cluster $CLUSTER up: $(hosts | tr '\n' ' ')(master $(host 1)), client $CLIENT"
}

batch_config() { cat "$DIR"/etc/lsb.* | md5sum; }  # a digest of the batch configuration

gone() {  # gone PID...: none of the processes is alive
    local pid
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 1; done
    return 0
}

reconfigure() {  # mbatchd reads the lsb.* files again: OpenLava's badmin reconfig restarts it
    local old
    old=$(running 1 mbatchd)
    # on the master: badmin checks the files with mbatchd -C, which refuses to on any other host
    on_master badmin reconfig -f >/dev/null 2>&1 || die "badmin reconfig -f on $(host 1) failed"
    # shellcheck disable=SC2086
    wait_for "$WAIT" "the old mbatchd to exit (badmin reconfig)" gone $old
    wait_for "$WAIT" "every host ok in bhosts after badmin reconfig" hosts_ok
    echo "openlava.sh: reconfigured (lsb.* changed; mbatchd restarted)"
}

login() {  # login USER: USER's ~/.bashrc sources profile.lsf on its first line (idempotent)
    local user=${1:-} home line rest
    [[ -n $user ]] || die "usage: $0 login USER"
    home=$(getent passwd "$user" | cut -d: -f6) || die "no user $user"
    [[ -f $DIR/etc/profile.lsf ]] || die "no $DIR/etc/profile.lsf: run bash .ci/openlava.sh start first"
    line="[ -r $DIR/etc/profile.lsf ] && . $DIR/etc/profile.lsf  # djsb-openlava: LSF commands in every shell"
    if [[ -f $home/.bashrc ]] && grep -qxF "$line" "$home/.bashrc"; then return 0; fi
    rest=$(cat "$home/.bashrc" 2>/dev/null || true)
    printf '%s\n%s\n' "$line" "$rest" > "$home/.bashrc"  # an existing file keeps its owner
    chown "$user:" "$home/.bashrc"
    echo "openlava.sh: $home/.bashrc sources $DIR/etc/profile.lsf"
}

stop() {
    local i pid pids
    timeout 10 bkill -u all 0 >/dev/null 2>&1 || true
    for ((i = 1; i <= NHOSTS; i++)); do
        pids=$(ip netns pids "$(host "$i")" 2>/dev/null || true)
        for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
    done
    local deadline=$((SECONDS + 10))
    for ((i = 1; i <= NHOSTS; i++)); do
        while [[ -n $(ip netns pids "$(host "$i")" 2>/dev/null) ]] && ((SECONDS < deadline)); do sleep 0.2; done
        pids=$(ip netns pids "$(host "$i")" 2>/dev/null || true)
        for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
    done
    for ((i = 1; i <= NHOSTS; i++)); do
        ip link del "lava$i" 2>/dev/null || true
        ip netns del "$(host "$i")" 2>/dev/null || true
    done
    ip link del "$BRIDGE" 2>/dev/null || true
    while command -v iptables >/dev/null && iptables -D "${FORWARD_RULE[@]}" 2>/dev/null; do :; done
    echo "openlava.sh: stopped"
}

smoke() {
    local out job
    out=$(cd /tmp && bsub -o /dev/null -e /dev/null -J djsb-smoke sh -c 'hostname') || die "bsub: $out"
    job=$(sed -n 's/^Job <\([0-9]*\)>.*/\1/p' <<<"$out")
    [[ -n $job ]] || die "bsub printed no job id: $out"
    wait_for 60 "job $job DONE" sh -c "bjobs -a -noheader $job | awk '{ exit \$3 != \"DONE\" }'"
    echo "openlava.sh: job $job DONE"
}

case ${1:-} in
    deps) deps ;;
    install) install ;;
    start) start ;;
    stop) stop ;;
    status) hosts_ok ;;
    smoke) smoke ;;
    login) login "${2:-}" ;;
    env) printf 'export PATH=%q:"$PATH" LSF_ENVDIR=%q\n' "$PREFIX/bin" "$DIR/etc" ;;
    *) die "usage: $0 deps|install|start|stop|status|smoke|env|login USER" ;;
esac
