#!/usr/bin/env bash
# Throwaway sshds on 127.0.0.1 for the SSH transports' tests: `bash .ci/sshd.sh install|start|stop`.
#
# Two instances: the login node in DJSB_SSHD_DIR [/var/lib/djsb-sshd] on DJSB_SSHD_PORT [2222], and
# a jump host (the tests' ProxyJump bastion) in DJSB_SSHD_JUMP_DIR [/var/lib/djsb-sshd-jump] on
# DJSB_SSHD_JUMP_PORT [2223]. Each has a host key, a client key pair whose public half is the only
# authorized key (for root and for the throwaway user djsb-remote), a known_hosts file with the host
# key, and its pid file. Only key authentication, only on the loopback address.
set -euo pipefail
DIR=${DJSB_SSHD_DIR:-/var/lib/djsb-sshd}
PORT=${DJSB_SSHD_PORT:-2222}
JUMP_DIR=${DJSB_SSHD_JUMP_DIR:-/var/lib/djsb-sshd-jump}
JUMP_PORT=${DJSB_SSHD_JUMP_PORT:-2223}
REMOTE_USER=djsb-remote

do_install() {
    id "$REMOTE_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$REMOTE_USER"
    usermod -p "*" "$REMOTE_USER"  # no password, but not locked: sshd without PAM refuses locked accounts
    command -v /usr/sbin/sshd >/dev/null && return 0
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server >/dev/null
}

# authorize DIR's client key for the throwaway user (sshd reads the file as that user)
authorize_remote_user() {
    local home
    home=$(getent passwd "$REMOTE_USER" | cut -d: -f6)
    install -d -m 700 -o "$REMOTE_USER" -g "$REMOTE_USER" "$home/.ssh"
    touch "$home/.ssh/authorized_keys"
    grep -qxF "$(cat "$1/client_ed25519.pub")" "$home/.ssh/authorized_keys" \
        || cat "$1/client_ed25519.pub" >> "$home/.ssh/authorized_keys"
    chown "$REMOTE_USER:" "$home/.ssh/authorized_keys"
    chmod 600 "$home/.ssh/authorized_keys"
}

start_one() {  # DIR PORT
    local dir=$1 port=$2
    if [[ -s $dir/sshd.pid ]] && kill -0 "$(cat "$dir/sshd.pid")" 2>/dev/null; then return 0; fi
    mkdir -p "$dir" /run/sshd
    chmod 700 "$dir"
    [[ -f $dir/host_ed25519 ]] || ssh-keygen -q -t ed25519 -N '' -f "$dir/host_ed25519"
    [[ -f $dir/client_ed25519 ]] || ssh-keygen -q -t ed25519 -N '' -f "$dir/client_ed25519"
    cp "$dir/client_ed25519.pub" "$dir/authorized_keys"
    chmod 600 "$dir/authorized_keys"
    authorize_remote_user "$dir"
    printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$dir/host_ed25519.pub")" > "$dir/known_hosts"
    cat > "$dir/sshd_config" <<CONF
Port $port
ListenAddress 127.0.0.1
HostKey $dir/host_ed25519
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys .ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowTcpForwarding yes
Subsystem sftp internal-sftp
CONF
    /usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log"
    for _ in $(seq 1 50); do
        ssh-keyscan -p "$port" 127.0.0.1 >/dev/null 2>&1 && { echo "sshd: up on 127.0.0.1:$port"; return 0; }
        sleep 0.1
    done
    echo "sshd: did not start, see $dir/sshd.log" >&2
    return 1
}

stop_one() {  # DIR
    [[ -s $1/sshd.pid ]] && kill "$(cat "$1/sshd.pid")" 2>/dev/null || true
    rm -f "$1/sshd.pid"
}

case ${1:-} in
    install) do_install ;;
    start) do_install; start_one "$DIR" "$PORT"; start_one "$JUMP_DIR" "$JUMP_PORT" ;;
    stop) stop_one "$DIR"; stop_one "$JUMP_DIR" ;;
    *) echo "usage: $0 install|start|stop" >&2; exit 2 ;;
esac
