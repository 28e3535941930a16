#!/usr/bin/env bash
# Debian's PostgreSQL server binaries for the store and checkpoint tests: tests/pg_server.py
# starts a throwaway cluster from them (initdb in a temp dir, loopback only, as the
# `postgres` user when run as root). Idempotent: does nothing when initdb is there.
# Runs apt as root, or through sudo where that is available.
set -euo pipefail
if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-postgres: not root and no sudo; install Debian's postgresql package by hand" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# The package's own cluster is not wanted: the tests make their own.
$SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
echo "install-postgres: $(ls /usr/lib/postgresql/*/bin/initdb)"
