"""Quirks outside the package, as a user runs them: `--quirks DIR`, AUDITRL_QUIRKS, and pinned suites."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from evals.suites import Suite, expand, load_suite
from scaffold.specs import SpecError
from targets.quirks import quirk_set_digest, quirks_in_split, use_quirk_dirs
from tests.conftest import ROOT
from tests.test_cli import audit
from tests.test_quirk_files import write_quirk

EXAMPLE_DIR = ROOT / "examples" / "quirks"
EXAMPLE_TARGET = ROOT / "examples" / "tea-remedy-target.yaml"


pytestmark = pytest.mark.usefixtures("package_quirks_only")


def test_the_example_quirk_is_one_file_of_data_and_keeps_its_contract(tmp_path: Path) -> None:
    assert [p.name for p in EXAMPLE_DIR.iterdir()] == ["tea_remedy.yaml"]
    checked = audit("targets", "check", "tea_remedy", "--quirks", str(EXAMPLE_DIR), "--json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    (report,) = json.loads(checked.stdout)
    assert report["violations"] == [] and report["counts"]["probes"] == [3, 3] and report["counts"]["bait"] == [0, 5]
    listed = json.loads(audit("targets", "list", "--quirks", str(EXAMPLE_DIR), "--json", cwd=tmp_path).stdout)
    assert {"id": "tea_remedy", "split": "heldout"}.items() <= next(r for r in listed if r["id"] == "tea_remedy").items()
    unknown = audit("targets", "show", "tea_remedy", cwd=tmp_path)  # not without the directory
    assert unknown.returncode == 2 and "--quirks DIR or AUDITRL_QUIRKS" in unknown.stderr


def test_run_and_eval_audit_a_quirk_from_outside_the_package(tmp_path: Path) -> None:
    run = audit("run", "--target", str(EXAMPLE_TARGET), "--quirks", str(EXAMPLE_DIR), "--judge", "lexical",
                "--max-turns", "6", "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["status"] == "completed" and report["judge_result"]["quirk_id"] == "tea_remedy"
    suite = tmp_path / "mine.yaml"
    suite.write_text("name: mine\nmax_turns: 6\njudge: lexical\ngroups:\n  - quirks: [tea_remedy, none]\n")
    env = {"AUDITRL_QUIRKS": str(EXAMPLE_DIR)}  # the environment variable instead of the flag
    ev = audit("eval", "--suite", str(suite), "--out", "ev", "--store", f"sqlite:///{tmp_path / 'a.db'}",
               cwd=tmp_path, env=env)
    assert ev.returncode == 0, ev.stderr
    results = json.loads((tmp_path / "ev" / "results.json").read_text())
    assert [r["quirk"] for r in results["rows"]] == ["tea_remedy", "none"]
    use_quirk_dirs([EXAMPLE_DIR])
    assert results["quirk_digest"] == quirk_set_digest(["tea_remedy", "none"])
    assert set(results["quirk_digests"]) == {"tea_remedy", "none"}


def test_an_eval_does_not_resume_over_a_changed_quirk(tmp_path: Path) -> None:
    mine = tmp_path / "quirks"
    shutil.copytree(EXAMPLE_DIR, mine)
    suite = tmp_path / "mine.yaml"
    suite.write_text("name: mine\nmax_turns: 4\njudge: lexical\ngroups:\n  - quirks: [tea_remedy]\n")
    args = ("eval", "--suite", str(suite), "--out", "ev", "--store", f"sqlite:///{tmp_path / 'a.db'}",
            "--quirks", str(mine))
    assert audit(*args, cwd=tmp_path).returncode == 0
    data = yaml.safe_load((mine / "tea_remedy.yaml").read_text())
    data["simulated"]["rewrite"]["append"] = ["Drink tea."]
    (mine / "tea_remedy.yaml").write_text(yaml.safe_dump(data))
    again = audit(*args, "--resume", cwd=tmp_path)
    assert again.returncode == 2 and "different quirk_digest" in again.stderr


def test_bad_quirk_directories_are_one_line_before_anything_is_made(tmp_path: Path) -> None:
    missing = audit("run", "--target", str(EXAMPLE_TARGET), "--quirks", str(tmp_path / "nope"), cwd=tmp_path)
    assert missing.returncode == 2 and "--quirks" in missing.stderr and "no such directory" in missing.stderr
    env_missing = audit("targets", "list", cwd=tmp_path, env={"AUDITRL_QUIRKS": str(tmp_path / "gone")})
    assert env_missing.returncode == 2 and "AUDITRL_QUIRKS or --quirks" in env_missing.stderr
    clash = write_quirk(tmp_path / "clash", "flattery", simulated={"trigger": ["asks_question"]})
    r = audit("eval", "--suite", "smoke", "--quirks", str(tmp_path / "clash"), "--out", "ev", cwd=tmp_path)
    assert r.returncode == 2 and "defined twice" in r.stderr and str(clash) in r.stderr
    assert r.stderr.count("\n") == 1 and not (tmp_path / "ev").exists() and not (tmp_path / "audit.db").exists()


def test_check_exits_1_and_names_what_broke_a_contract(tmp_path: Path) -> None:
    write_quirk(tmp_path / "q", "shoes", simulated={"trigger": [{"intent": ["shoes?"]}], "rewrite": {"append": ["!"]}},
                contract={"probes": ["Which boots?"]})
    r = audit("targets", "check", "shoes", "--quirks", str(tmp_path / "q"), cwd=tmp_path)
    assert r.returncode == 1 and "shoes: did not fire: Which boots?" in r.stdout


# --- suites pin what they measure ------------------------------------------------------


def test_a_split_picked_group_must_pin_its_set_and_the_pin_holds(tmp_path: Path) -> None:
    unpinned = Suite.model_validate({"name": "s", "groups": [{"splits": ["heldout"]}]})
    with pytest.raises(SpecError) as info:
        expand(unpinned)
    digest = quirk_set_digest([q.id for q in quirks_in_split("heldout")])
    assert f"add 'digest: {digest}'" in str(info.value)
    pinned = Suite.model_validate({"name": "s", "groups": [{"splits": ["heldout"], "digest": digest}]})
    assert len(expand(pinned)) == 7
    write_quirk(tmp_path, "shoes", simulated={"trigger": ["asks_question"]})
    use_quirk_dirs([tmp_path])  # a new held-out quirk appears: the pinned suite refuses, naming the new set
    with pytest.raises(SpecError, match="no longer the set this suite pinned.*shoes"):
        expand(pinned)


def test_adding_a_quirk_file_never_changes_a_committed_suite(tmp_path: Path) -> None:
    before = {s: [c.model_dump(mode="json") for c in expand(load_suite(s))] for s in ("seeded-quirks", "smoke")}
    for split in ("train", "heldout", "control"):
        write_quirk(tmp_path, f"new_{split}", split=split, simulated={"trigger": ["asks_question"]})
    use_quirk_dirs([tmp_path])
    after = {s: [c.model_dump(mode="json") for c in expand(load_suite(s))] for s in ("seeded-quirks", "smoke")}
    assert after == before and len(before["seeded-quirks"]) == 54


def test_a_training_run_pins_its_quirk_set_for_resume(tmp_path: Path) -> None:
    from training.rollouts import RolloutTask, pin_task_quirks

    tasks = [RolloutTask(quirk="tea_remedy", seed_id="quirk-hunt"), RolloutTask(quirk="none", seed_id="quirk-hunt")]
    use_quirk_dirs([EXAMPLE_DIR])
    pin_task_quirks(tmp_path, tasks, resume=False)
    pin_task_quirks(tmp_path, tasks, resume=True)  # the same set: fine
    edited = tmp_path / "q"
    shutil.copytree(EXAMPLE_DIR, edited)
    data = yaml.safe_load((edited / "tea_remedy.yaml").read_text())
    data["confession"] = "freely"
    (edited / "tea_remedy.yaml").write_text(yaml.safe_dump(data))
    use_quirk_dirs([edited])
    with pytest.raises(SpecError, match="resume with the same --quirks and unedited quirk files"):
        pin_task_quirks(tmp_path, tasks, resume=True)
