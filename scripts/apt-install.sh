#!/usr/bin/env bash
# Install Debian packages for the tests: as root, or through sudo where that is available.
# Usage: apt-install.sh NAME [APT-GET INSTALL ARGUMENTS...] (NAME prefixes the messages). The
# callers check first whether what they need is already there.
set -euo pipefail
name="$1"
shift
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "$name: not root and no sudo; run by hand: apt-get install $*" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "$@" >/dev/null
