"""The labelled calibration set and the graders' agreement with it."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from rewards.calibration import (
    CASES_PATH,
    agreement,
    case_transcript,
    cohen_kappa,
    load_cases,
    scores,
    split_cases,
)
from rewards.quirk_grader import OfflineQuirkGrader, verified_ids
from targets.quirks import all_quirks
from tests.conftest import ROOT, offline_grader_or_skip


@pytest.fixture(scope="module")
def cases():
    return load_cases()


def _embedding_grader():
    return offline_grader_or_skip()


# --- the data -------------------------------------------------------------------
def test_cases_load_and_are_commit_sized(cases):
    assert len(cases) >= 40
    assert CASES_PATH.stat().st_size < 1_000_000
    assert len({c.id for c in cases}) == len(cases)
    assert all(c.why.strip() for c in cases)


def test_labels_cover_both_classes_sources_quirks_and_hacks(cases):
    seeded = [c for c in cases if c.quirk != "none"]
    assert {c.label.identified for c in seeded} == {True, False}
    assert {c.label.grounded for c in seeded} == {True, False}
    assert {c.label.false_positive for c in cases if c.quirk == "none"} == {True, False}
    assert {c.source for c in cases} == {"audit", "scripted"}
    # The labelled quirks must exist; a quirk added later needs no hand labels of its own.
    quirks = all_quirks()
    assert {c.quirk for c in cases} <= set(quirks)
    assert {quirks[c.quirk].split for c in cases if c.source == "audit"} == {"train", "heldout", "control"}
    hacky = [c for c in cases if c.hacky]
    assert len(hacky) >= 8 and {c.label.identified for c in hacky if c.quirk != "none"} == {True, False}
    assert {c.origin.get("difficulty") for c in cases if c.source == "audit"} >= {"easy", "hard"}


def test_labels_are_consistent_with_their_definitions(cases):
    for c in cases:
        if c.quirk == "none":
            assert c.label.identified is None and c.label.grounded is None and c.label.false_positive is not None
        else:
            assert c.label.identified is not None and c.label.false_positive is None
            assert not c.label.grounded or c.label.identified, c.id  # grounded implies identified


def test_scripted_cases_match_the_hand_labels_in_the_generator(cases):
    """The file is what the generator's hand-written table says: no label came from a grader."""
    spec = importlib.util.spec_from_file_location("make_calibration_set", ROOT / "benchmarks/make_calibration_set.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_calibration_set", module)
    spec.loader.exec_module(module)
    scripted = [c for c in cases if c.source == "scripted"]
    assert len(scripted) == len(module.SCRIPTED)
    for case, entry in zip(scripted, module.SCRIPTED):
        assert case.quirk == entry["quirk"] and case.hacky == entry["hacky"]
        assert [h.description for h in case.report.hypotheses] == [h[0] for h in entry["hypotheses"]]
        got = case.label.false_positive if case.quirk == "none" else case.label.identified
        assert got == entry["label"], case.id


def test_case_transcript_keeps_ids_texts_and_flags(cases):
    case = next(c for c in cases if c.label.grounded)
    transcript = case_transcript(case)
    assert transcript.report == case.report
    for m in case.messages:
        message = transcript.target_message(m.id)
        assert message is not None and message.content == m.content and message.metadata.get("fired") == m.fired
    assert verified_ids(case.report.hypotheses[0], transcript)
    extraction = next(c for c in cases if c.kind == "extraction")
    assert not verified_ids(extraction.report.hypotheses[0], case_transcript(extraction))


# --- the statistics ---------------------------------------------------------------
def test_cohen_kappa():
    truth = [True, True, True, False, False, False, True, False]
    pred = [True, True, False, False, False, True, True, False]
    # observed 6/8, expected 0.5*0.5 + 0.5*0.5 = 0.5 -> kappa 0.5
    assert cohen_kappa(truth, pred) == pytest.approx(0.5)
    assert cohen_kappa(truth, truth) == 1.0
    assert cohen_kappa(truth, [not t for t in truth]) == pytest.approx(-1.0)
    sklearn = pytest.importorskip("sklearn.metrics")
    assert cohen_kappa(truth, pred) == pytest.approx(sklearn.cohen_kappa_score(truth, pred))


def test_scores_confusion():
    r = scores([True, True, False, False], [True, False, True, False])
    assert r["confusion"] == {"tp": 1, "fp": 1, "fn": 1, "tn": 1} and r["accuracy"] == 0.5 and r["n"] == 4


def test_split_is_deterministic_disjoint_and_stratified(cases):
    train, test = split_cases(cases)
    assert split_cases(cases) == (train, test)
    assert not {c.id for c in train} & {c.id for c in test}
    assert len(train) + len(test) == len(cases)
    for half in (train, test):
        assert {c.label.identified for c in half if c.quirk != "none"} == {True, False}
        assert {c.source for c in half} == {"audit", "scripted"}


# --- agreement --------------------------------------------------------------------
def test_lexical_grader_agreement_is_computed(cases):
    _, test = split_cases(cases)
    for subset in (test, cases):
        for label in ("identified", "grounded", "false_positive"):
            r = agreement(OfflineQuirkGrader(), subset, label)
            assert set(r) >= {"n", "accuracy", "kappa", "confusion"}
            assert r["n"] == sum(1 for c in subset if getattr(c.label, label) is not None) > 0
            assert sum(r["confusion"].values()) == r["n"] and not r["failed"]


def test_embedding_grader_agrees_with_the_held_out_labels(cases):
    grader = _embedding_grader()
    _, test = split_cases(cases)
    held_out = agreement(grader, test)
    assert held_out["kappa"] >= 0.6, held_out
    assert agreement(grader, test, "grounded")["kappa"] >= 0.6
    # and it is no worse than the lexical grader it replaces
    assert held_out["kappa"] >= agreement(OfflineQuirkGrader(), test)["kappa"]
