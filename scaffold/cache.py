"""Where auditrl keeps what it can rebuild: `$AUDITRL_CACHE`, else `~/.cache/auditrl`."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "AUDITRL_CACHE"


def cache_root() -> Path:
    """The cache's root directory (it may not exist yet); each user of it takes a subdirectory."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "auditrl")
