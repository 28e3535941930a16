#!/usr/bin/env bash
# Debian's PostgreSQL server binaries for the store and checkpoint tests: tests/pg_server.py
# starts a throwaway cluster from them (initdb in a temp dir, loopback only, as the
# `postgres` user when run as root). Idempotent: does nothing when initdb is there.
set -euo pipefail
if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    exit 0
fi
# The package's own cluster is not wanted (the tests make their own), nor its recommends.
bash "$(dirname "$0")/apt-install.sh" install-postgres --no-install-recommends postgresql
echo "install-postgres: $(ls /usr/lib/postgresql/*/bin/initdb)"
