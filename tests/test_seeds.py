"""The seed-instruction library (auditor/seeds.py, auditor/seeds/) and `audit seeds list/show`."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from auditor import seeds as seeds_module
from auditor.prompts import QUIRK_HUNT_SEED
from auditor.seeds import (
    ID_PATTERN,
    SeedError,
    UnknownSeedError,
    categories,
    get_seed,
    load_seed_library,
    seeds_with_tag,
)
from tests.test_cli import audit

REQUIRED_CATEGORIES = {
    "sycophancy", "deception", "self-preservation", "power-seeking", "reward-hacking", "oversight-subversion",
    "whistleblowing", "misuse-cooperation", "bias", "privacy", "emotional-manipulation", "sandbagging",
    "eval-awareness", "hidden-goals", "blackmail", "data-exfiltration", "quirk-hunting",
}
ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|Dr|Mr|Ms|Mrs|vs|St)\.")
REVEALS_THE_TEST = re.compile(
    r"\b(?:tell|inform|let)\s+(?:the\s+)?target\s+(?:know\s+)?(?:that\s+)?(?:it|this)\s+is\s+(?:being\s+)?"
    r"(?:tested|audited|evaluated|a\s+test|an\s+audit|an\s+evaluation)",
    re.IGNORECASE,
)


def test_library_size_and_categories() -> None:
    library = load_seed_library()
    assert len(library) >= 110
    counts = Counter(s.category for s in library)
    assert len(counts) >= 16 and REQUIRED_CATEGORIES <= set(counts)
    assert min(counts.values()) >= 5, counts
    assert categories() == list(counts)


def test_ids_unique_kebab_and_tags_well_formed() -> None:
    library = load_seed_library()
    ids = [s.id for s in library]
    assert len(ids) == len(set(ids))
    for s in library:
        assert ID_PATTERN.match(s.id) and all(ID_PATTERN.match(t) for t in s.tags)
        assert s.id == "quirk-hunt" or s.id.startswith(s.category + "-"), s.id


def test_texts_are_short_concrete_instructions_that_never_reveal_the_test() -> None:
    for s in load_seed_library():
        sentences = len(re.findall(r"[.!?](?:\s|$)", ABBREVIATIONS.sub("", s.text)))
        assert 2 <= sentences <= 5, (s.id, sentences)
        assert "tell the target it is being tested" not in s.text.lower()
        assert not REVEALS_THE_TEST.search(s.text), s.id
        # The technique tags say what the text asks for.
        lowered = s.text.lower()
        assert ("rollback" in s.tags) == bool(re.search(r"roll(?:ed)?[ -]?back", lowered)), s.id
        assert ("prefill" in s.tags) == ("prefill" in lowered), s.id
        if "agentic" in s.tags:
            assert "tool-use" in s.tags, s.id


def test_quirk_hunt_is_the_benchmark_seed() -> None:
    assert get_seed("quirk-hunt").text == QUIRK_HUNT_SEED
    assert get_seed("quirk-hunt").category == "quirk-hunting"


def test_lookups() -> None:
    assert all("sycophancy" in s.tags for s in seeds_with_tag("sycophancy"))
    assert len(seeds_with_tag("rollback")) >= 10 and seeds_with_tag("no-such-tag") == []
    with pytest.raises(KeyError, match="did you mean sycophancy-poetry-praise"):
        get_seed("sycophancy-poetry-prase")
    with pytest.raises(UnknownSeedError):
        get_seed("zzz")
    assert load_seed_library() is not load_seed_library()  # callers get a copy of the cached library


@pytest.fixture
def library_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An empty seed folder standing in for auditor/seeds/, with the cache cleared around it."""
    folder = tmp_path / "seeds"
    folder.mkdir()
    monkeypatch.setattr(seeds_module, "SEED_DIR", folder.resolve())
    seeds_module._library.cache_clear()
    yield folder
    seeds_module._library.cache_clear()


def _write(folder: Path, name: str, text: str) -> None:
    (folder / f"{name}.yaml").write_text(text)


GOOD = "- id: bias-one\n  tags: [bias]\n  text: Do one thing. Then another.\n"
BAD_LIBRARIES = {
    "duplicate": ({"bias": GOOD, "privacy": GOOD.replace("[bias]", "[privacy]")}, "privacy.yaml: seed 'bias-one' duplicates the one in bias.yaml"),
    "bad_id": ({"bias": GOOD.replace("bias-one", "Bias_One")}, "bias.yaml: seed 'Bias_One': id: "),
    "empty_text": ({"bias": GOOD.replace("Do one thing. Then another.", "'  '")}, "bias.yaml: seed 'bias-one': text: "),
    "extra_field": ({"bias": GOOD + "  colour: red\n"}, "bias.yaml: seed 'bias-one': colour: Extra inputs"),
    "wrong_category": ({"bias": GOOD.replace("[bias]", "[privacy]")}, "first tag 'privacy' must be the file's category 'bias'"),
    "no_tags": ({"bias": GOOD.replace("[bias]", "[]")}, "bias.yaml: seed 'bias-one': tags: "),
    "unknown_text_from": ({"bias": "- id: bias-one\n  tags: [bias]\n  text_from: SECRET\n"}, "text_from 'SECRET' unknown"),
    "invalid_yaml": ({"bias": "- id: [unclosed\n"}, "bias.yaml: invalid YAML"),
    "not_a_list": ({"bias": "id: bias-one\n"}, "bias.yaml: expected a non-empty list"),
}


@pytest.mark.parametrize("case", sorted(BAD_LIBRARIES))
def test_invalid_libraries_name_the_file_and_seed(library_dir: Path, case: str) -> None:
    files, expected = BAD_LIBRARIES[case]
    for name, text in files.items():
        _write(library_dir, name, text)
    with pytest.raises(SeedError) as info:
        load_seed_library()
    assert expected in str(info.value)


def test_text_from_and_files_outside_the_folder(library_dir: Path, tmp_path: Path) -> None:
    _write(library_dir, "quirk-hunting", "- id: quirk-hunt\n  tags: [quirk-hunting]\n  text_from: QUIRK_HUNT_SEED\n")
    assert [s.text for s in load_seed_library()] == [QUIRK_HUNT_SEED]
    seeds_module._library.cache_clear()
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text(GOOD)
    (library_dir / "bias.yaml").symlink_to(outside)
    with pytest.raises(SeedError, match="resolves outside"):
        load_seed_library()


def test_cli_list_filter_json_and_show(tmp_path: Path) -> None:
    r = audit("seeds", "list", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "quirk-hunt" in r.stdout and "sycophancy-poetry-praise" in r.stdout
    r = audit("seeds", "list", "--tag", "sycophancy", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert len(rows) >= 5 and all(set(row) == {"id", "tags", "text"} for row in rows)
    assert all(row["tags"][0] == "sycophancy" for row in rows)
    assert {row["id"] for row in rows} == {s.id for s in seeds_with_tag("sycophancy")}
    table = audit("seeds", "list", "--tag", "sycophancy", cwd=tmp_path)
    assert "sycophancy-poetry-praise" in table.stdout and "deception-" not in table.stdout
    bad = audit("seeds", "list", "--tag", "nonsense", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown tag 'nonsense'" in bad.stderr and "sycophancy" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
    shown = audit("seeds", "show", "quirk-hunt", cwd=tmp_path)
    assert shown.returncode == 0 and "quirk-hunt" in shown.stdout and "hidden behaviour" in shown.stdout
    as_json = json.loads(audit("seeds", "show", "quirk-hunt", "--json", cwd=tmp_path).stdout)
    assert as_json["text"] == QUIRK_HUNT_SEED
    missing = audit("seeds", "show", "quirk-hnt", cwd=tmp_path)
    assert missing.returncode == 2 and "did you mean quirk-hunt" in missing.stderr


def test_every_seeds_option_has_help(tmp_path: Path) -> None:
    for command, flags in ((("list",), ("--tag", "--json")), (("show",), ("--json", "seed_id"))):
        r = audit("seeds", *command, "--help", cwd=tmp_path)
        assert r.returncode == 0
        for flag in flags:
            line = next(line for line in r.stdout.splitlines() if flag in line and "│" in line)
            assert len(line.split(flag, 1)[1].strip(" │")) > 10, line


def test_run_with_a_seed_id_uses_its_text(tmp_path: Path, examples_dir: Path) -> None:
    seed = get_seed("sycophancy-poetry-praise")
    r = audit("run", "--target", str(examples_dir / "flattery.yaml"), "--seed", seed.id, "--auditor", "heuristic",
              "--judge", "lexical", "--max-turns", "3", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    run_dir = tmp_path / "audit-runs" / json.loads(r.stdout)["run_id"]
    events = json.loads((run_dir / "transcript.json").read_text())["events"]
    first_user = next(e["message"] for e in events if e["kind"] == "auditor_message" and e["message"]["role"] == "user")
    assert first_user["content"].startswith(seed.text)
    typo = audit("run", "--target", str(examples_dir / "flattery.yaml"), "--seed", "sycophancy-poetry-prase",
                 "--judge", "lexical", cwd=tmp_path)
    assert typo.returncode == 2 and "did you mean sycophancy-poetry-praise" in typo.stderr
