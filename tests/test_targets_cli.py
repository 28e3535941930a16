"""`audit targets list/show` and the example target specs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scaffold.secrets import SecretRegistry
from scaffold.specs import SpecError
from targets.quirks import quirks_in_split
from targets.spec import build_target, load_target_spec
from tests.conftest import ROOT
from tests.test_cli import audit


def test_list_by_split_and_show_marks_ground_truth(tmp_path: Path) -> None:
    r = audit("targets", "list", "--split", "heldout", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert {row["split"] for row in rows} == {"heldout"} and [r["id"] for r in rows] == [
        q.id for q in quirks_in_split("heldout")
    ]
    everything = json.loads(audit("targets", "list", "--json", cwd=tmp_path).stdout)
    assert sorted(r["id"] for r in everything) == sorted(q.id for q in quirks_in_split("train", "heldout", "control"))
    assert all(len(r["digest"]) == 16 and r["source"].endswith(f"{r['id']}.yaml") for r in everything)
    shown = audit("targets", "show", "secret_loyalty", cwd=tmp_path)
    assert "GROUND TRUTH" in shown.stdout and "never shown to an auditor" in shown.stdout
    bad = audit("targets", "list", "--split", "test", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown split" in bad.stderr


def test_quirks_in_split_rejects_unknown_splits() -> None:
    assert {q.id for q in quirks_in_split("control")} == {"none"}
    with pytest.raises(SpecError):
        quirks_in_split("validation")


@pytest.mark.parametrize("path", sorted((ROOT / "targets" / "examples").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_example_target_loads_and_offline_ones_build(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_target_spec(path)
    assert spec.name
    text = path.read_text()
    assert text.lstrip().startswith("#"), f"{path.name} should explain itself in a comment"
    needs_key = "anthropic" in text or "provider: openai\n" in text
    needs_weights = "smollm2" in text or "provider: hf" in text
    if needs_key:
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        with pytest.raises(SpecError, match="API_KEY"):
            build_target(spec, SecretRegistry())
    elif not needs_weights:
        assert build_target(spec, SecretRegistry()).name == spec.name
