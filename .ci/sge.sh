#!/usr/bin/env bash
# A one-host Grid Engine cell (Debian's gridengine 8.1.9) for the SGE job module's live tests.
#
#   bash .ci/sge.sh install   apt-get install the master, exec host and client, unattended
#   bash .ci/sge.sh start     configure the cell (this host: admin, submit and exec host; queues
#                             all.q and shared.q with slots = nproc each; parallel environment smp,
#                             $pe_slots) and start sge_qmaster and sge_execd; waits until the host
#                             reports a load
#   bash .ci/sge.sh stop      delete every job, stop both daemons
#   bash .ci/sge.sh status    exit 0 when the cell answers and the host is up
#
# Every step is idempotent and every wait bounded. Debian's packages ask three debconf questions
# (their templates: shared/gridengineconfig, shared/gridenginecell, shared/gridenginemaster); they
# are preseeded here so apt-get asks nothing. The master's postinst runs init_cluster, which makes
# the cell "default" under SGE_ROOT=/var/lib/gridengine with classic spooling in /var/spool/gridengine.
# The daemons are started directly, not through init scripts or systemd (neither runs in CI sandboxes).
set -euo pipefail

export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
HOST=$(hostname)
BIN=/usr/lib/gridengine
WAIT=${SGE_WAIT:-60}            # seconds to wait for a daemon to come up or go down
NPROC=$(nproc)

die() { echo "sge.sh: $*" >&2; exit 1; }

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds, or fail clearly
    local seconds=$1 what=$2 deadline=$((SECONDS + $1))
    shift 2
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || die "$what not reached within ${seconds}s"
        sleep 0.5
    done
}

install() {
    if command -v qsub >/dev/null && [[ -x /usr/sbin/sge_qmaster && -x /usr/sbin/sge_execd ]] \
            && [[ -f $SGE_ROOT/$SGE_CELL/common/bootstrap ]]; then
        echo "sge.sh: Grid Engine already installed"
        return 0
    fi
    local package
    for package in gridengine-common gridengine-master gridengine-exec gridengine-client; do
        printf '%s shared/%s\n' \
            "$package" "gridengineconfig boolean true" \
            "$package" "gridenginecell string $SGE_CELL" \
            "$package" "gridenginemaster string $HOST"
    done | debconf-set-selections
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q gridengine-master gridengine-exec \
        gridengine-client
}

qmaster_up() { timeout 10 qstat -f >/dev/null 2>&1; }
host_up() {  # the exec host reports a load (qhost prints "-" for a host without execd)
    qhost -h "$HOST" 2>/dev/null | awk -v h="$HOST" '$1 == h && $4 != "-" { ok = 1 } END { exit !ok }'
}

start() {
    [[ -x /usr/sbin/sge_qmaster ]] || die "Grid Engine is not installed: run bash .ci/sge.sh install"
    # The master must see this host under the name it resolves to (act_qmaster). Where this host's
    # name and localhost share 127.0.0.1, sge_qmaster resolves a client's address back to
    # "localhost" and refuses it ("local host name error"): host_aliases makes both one host.
    echo "$HOST" > "$SGE_ROOT/$SGE_CELL/common/act_qmaster"
    echo "$HOST localhost" > "$SGE_ROOT/$SGE_CELL/common/host_aliases"
    if ! qmaster_up; then
        /usr/sbin/sge_qmaster
        wait_for "$WAIT" "sge_qmaster answering" qmaster_up
    fi
    qconf -sh 2>/dev/null | grep -qx "$HOST" || qconf -ah "$HOST" >/dev/null
    qconf -ss 2>/dev/null | grep -qx "$HOST" || qconf -as "$HOST" >/dev/null
    configure_cell
    if ! pgrep -x sge_execd >/dev/null; then
        /usr/sbin/sge_execd
    fi
    wait_for "$WAIT" "exec host $HOST up in qhost" host_up
    # A fresh execd can start as "unknown" in the queue for a few seconds; clear any error state.
    qmod -c "all.q@$HOST" "shared.q@$HOST" >/dev/null 2>&1 || true
    qmod -e "all.q@$HOST" "shared.q@$HOST" >/dev/null 2>&1 || true
    echo "sge.sh: cell $SGE_CELL up on $HOST with $NPROC slots"
}

configure_cell() {  # exec host, pe smp, queue all.q: each added or modified in place
    local tmp
    tmp=$(mktemp -d)
    # qconf -Ae/-Ap/-Aq read a file in qconf -s* format; -M* modify an existing object.
    cat > "$tmp/host" <<EOF
hostname              $HOST
load_scaling          NONE
complex_values        NONE
user_lists            NONE
xuser_lists           NONE
projects              NONE
xprojects             NONE
usage_scaling         NONE
report_variables      NONE
EOF
    qconf -se "$HOST" >/dev/null 2>&1 || qconf -Ae "$tmp/host" >/dev/null
    cat > "$tmp/pe" <<EOF
pe_name            smp
slots              9999
user_lists         NONE
xuser_lists        NONE
start_proc_args    NONE
stop_proc_args     NONE
allocation_rule    \$pe_slots
control_slaves     FALSE
job_is_first_task  TRUE
urgency_slots      min
accounting_summary FALSE
qsort_args         NONE
EOF
    if qconf -sp smp >/dev/null 2>&1; then qconf -Mp "$tmp/pe" >/dev/null; else qconf -Ap "$tmp/pe" >/dev/null; fi
    # all.q: the cell's slots. shared.q: as many slots again on the same host, for the jobs that
    # share the simulation's CPUs (oversubscription, and stop&continue, where the suspended
    # simulation keeps its slots): the SGE module's oversubscribe_queue.
    local queue
    for queue in all.q shared.q; do
        # Start from the built-in defaults (qconf -sq with no queue prints the template).
        qconf -sq 2>/dev/null | sed -e "s/^qname .*/qname                 $queue/" \
            -e "s/^hostlist .*/hostlist              $HOST/" \
            -e "s/^slots .*/slots                 $NPROC/" \
            -e "s/^pe_list .*/pe_list               smp/" \
            -e "s/^shell .*/shell                 \/bin\/sh/" \
            -e "s/^shell_start_mode .*/shell_start_mode      unix_behavior/" \
            -e "s/^load_thresholds .*/load_thresholds       NONE/" > "$tmp/$queue"
        grep -q "^qname *$queue" "$tmp/$queue" || die "qconf -sq printed no queue template"
        if qconf -sq "$queue" >/dev/null 2>&1; then
            qconf -Mq "$tmp/$queue" >/dev/null
        else
            qconf -Aq "$tmp/$queue" >/dev/null
        fi
    done
    # Global configuration: CI runs jobs as root (Debian's default min_uid is 1000); the accounting
    # file (qacct) is flushed each second, not every 15 s; the exec host reports every 5 s.
    qconf -sconf global | sed -e "s/^min_uid .*/min_uid                      0/" \
        -e "s/^min_gid .*/min_gid                      0/" \
        -e "s/^load_report_time .*/load_report_time             00:00:05/" \
        -e "s/flush_time=[0-9:]*/flush_time=00:00:01/" | grep -v '^#' > "$tmp/global"
    qconf -Mconf "$tmp/global" >/dev/null
    # Schedule every few seconds rather than every 15 s (the harness polls once a second).
    qconf -ssconf | sed -e "s/^schedule_interval .*/schedule_interval                 0:0:1/" \
        -e "s/^flush_submit_sec .*/flush_submit_sec                  1/" \
        -e "s/^flush_finish_sec .*/flush_finish_sec                  1/" > "$tmp/sched"
    qconf -Msconf "$tmp/sched" >/dev/null
    rm -rf "$tmp"
}

stop() {
    if qmaster_up; then
        qdel -f -u '*' >/dev/null 2>&1 || true
        qconf -ke "$HOST" >/dev/null 2>&1 || true
        qconf -km >/dev/null 2>&1 || true
    fi
    local pid
    for daemon in sge_execd sge_qmaster; do
        wait_for "$WAIT" "$daemon stopped" bash -c "! pgrep -x $daemon"
    done 2>/dev/null || {
        for pid in $(pgrep -x sge_execd) $(pgrep -x sge_qmaster); do kill "$pid" 2>/dev/null || true; done
        wait_for 10 "daemons killed" bash -c "! pgrep -x sge_execd && ! pgrep -x sge_qmaster"
    }
    echo "sge.sh: stopped"
}

case ${1:-} in
    install) install ;;
    start) start ;;
    stop) stop ;;
    status) qmaster_up && host_up ;;
    *) die "usage: $0 install|start|stop|status" ;;
esac
