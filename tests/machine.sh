#!/usr/bin/env bash
# What the test suite needs on the machine besides Python packages, made present (`make
# test-machine`, which `make test` runs first): Debian's packages for the real components the
# tests drive, and a PostgreSQL server and a Redis server answering on 127.0.0.1.
#   postgresql    the PostgreSQL path (127.0.0.1:5432, trust auth) and a private server per restart test
#   redis-server  the shared response cache and quota counters (127.0.0.1:6379)
#   nginx-light   the reverse proxy in front of two API hosts (tests/scale_out)
#   chromium      the dashboard's browser tests (Playwright drives Debian's chromium)
#   faketime      `make test-days` (every process of a run on another day)
#   curl          the dashboard's quickstart test runs the curl lines the page shows
# As root, missing packages are installed with apt-get; otherwise the script names them and
# stops. Servers that do not answer are started for the run (and left running).
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need+=(postgresql)
have redis-server || need+=(redis-server)
have nginx || need+=(nginx-light)
have chromium || need+=(chromium)
have faketime || need+=(faketime)
have curl || need+=(curl)

if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "The tests need these Debian packages: ${need[*]}" >&2
        echo "Install them (sudo apt-get install ${need[*]}), then run make test again." >&2
        exit 1
    fi
    echo "installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

answers() { python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 2).close()" 2>/dev/null; }

# the tests connect as postgres over TCP without a password (trust, loopback only)
if [ "$(id -u)" -eq 0 ] && command -v pg_ctlcluster >/dev/null; then
    version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
    [ -d "/etc/postgresql/$version/main" ] || pg_createcluster "$version" main >/dev/null
    conf="/etc/postgresql/$version/main/pg_hba.conf"
    if ! grep -q "^host all all 127.0.0.1/32 trust" "$conf"; then
        sed -i '1i host all all 127.0.0.1/32 trust' "$conf"
        # a running cluster reads the rule now; a stopped one (another server may answer on
        # 5432) reads it when it starts
        if pg_ctlcluster --skip-systemctl-redirect "$version" main status >/dev/null 2>&1; then
            pg_ctlcluster --skip-systemctl-redirect "$version" main reload
        fi
    fi
    if ! answers 5432; then
        pg_ctlcluster --skip-systemctl-redirect "$version" main start
        echo "started PostgreSQL $version"
    fi
elif ! answers 5432; then
    echo "No PostgreSQL answers on 127.0.0.1:5432 (trust auth for user postgres): start one." >&2
    exit 1
fi

if ! answers 6379; then
    redis-server --daemonize yes --save '' --appendonly no --bind 127.0.0.1 >/dev/null
    echo "started Redis"
fi
