#!/usr/bin/env bash
# Debian's chromium for the browser tests (Playwright drives it via executable_path;
# Playwright's own browser download is never used). Idempotent: does nothing when
# /usr/bin/chromium exists. Runs apt as root, or through sudo where that is available.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-chromium: not root and no sudo; install Debian's chromium package by hand" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium >/dev/null
echo "install-chromium: $(/usr/bin/chromium --version 2>/dev/null || echo installed)"
