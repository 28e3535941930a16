#!/usr/bin/env bash
# Debian's chromium for the browser tests (Playwright drives it via executable_path;
# Playwright's own browser download is never used). Idempotent: does nothing when
# /usr/bin/chromium exists.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
bash "$(dirname "$0")/apt-install.sh" install-chromium chromium
echo "install-chromium: $(/usr/bin/chromium --version 2>/dev/null || echo installed)"
