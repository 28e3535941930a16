"""The README lists the quirks from the files (`audit targets list --markdown`), so it cannot drift."""

from __future__ import annotations

import re

from audit.targets_cmd import markdown_table
from targets.quirks import all_quirks, use_quirk_dirs
from tests.conftest import ROOT


def test_the_readmes_quirk_table_is_the_generated_one() -> None:
    use_quirk_dirs([])
    text = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- quirks-table:[^\n]*-->\n(.*?)\n<!-- /quirks-table -->", text, re.S)
    assert block, "README.md lost its generated quirk table markers"
    expected = markdown_table(sorted(all_quirks().values(), key=lambda q: (q.split, q.id)))
    assert block.group(1).strip() == expected, "regenerate: audit targets list --markdown"
