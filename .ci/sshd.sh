#!/usr/bin/env bash
# A throwaway sshd on 127.0.0.1 for the SSH transport's tests: `bash .ci/sshd.sh install|start|stop`.
#
# Everything lives in DJSB_SSHD_DIR [/var/lib/djsb-sshd]: a host key, a client key pair whose public
# half is the only authorized key, a known_hosts file with the host key, and the pid file. Port
# DJSB_SSHD_PORT [2222]. Only key authentication, only on the loopback address.
set -euo pipefail
DIR=${DJSB_SSHD_DIR:-/var/lib/djsb-sshd}
PORT=${DJSB_SSHD_PORT:-2222}

do_install() {
    command -v /usr/sbin/sshd >/dev/null && return 0
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server >/dev/null
}

do_start() {
    if [[ -s $DIR/sshd.pid ]] && kill -0 "$(cat "$DIR/sshd.pid")" 2>/dev/null; then return 0; fi
    mkdir -p "$DIR" /run/sshd
    chmod 700 "$DIR"
    [[ -f $DIR/host_ed25519 ]] || ssh-keygen -q -t ed25519 -N '' -f "$DIR/host_ed25519"
    [[ -f $DIR/client_ed25519 ]] || ssh-keygen -q -t ed25519 -N '' -f "$DIR/client_ed25519"
    cp "$DIR/client_ed25519.pub" "$DIR/authorized_keys"
    chmod 600 "$DIR/authorized_keys"
    printf '[127.0.0.1]:%s %s\n' "$PORT" "$(cut -d' ' -f1,2 "$DIR/host_ed25519.pub")" > "$DIR/known_hosts"
    cat > "$DIR/sshd_config" <<CONF
Port $PORT
ListenAddress 127.0.0.1
HostKey $DIR/host_ed25519
PidFile $DIR/sshd.pid
AuthorizedKeysFile $DIR/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
CONF
    /usr/sbin/sshd -f "$DIR/sshd_config" -E "$DIR/sshd.log"
    for _ in $(seq 1 50); do
        ssh-keyscan -p "$PORT" 127.0.0.1 >/dev/null 2>&1 && { echo "sshd: up on 127.0.0.1:$PORT"; return 0; }
        sleep 0.1
    done
    echo "sshd: did not start, see $DIR/sshd.log" >&2
    return 1
}

do_stop() {
    [[ -s $DIR/sshd.pid ]] && kill "$(cat "$DIR/sshd.pid")" 2>/dev/null || true
    rm -f "$DIR/sshd.pid"
}

case ${1:-} in
    install) do_install ;;
    start) do_install; do_start ;;
    stop) do_stop ;;
    *) echo "usage: $0 install|start|stop" >&2; exit 2 ;;
esac
