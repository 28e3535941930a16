"""The difficulty curriculum (issue 16): a config field, validated up front, that sets the
organisms' difficulty by step in real rollouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from scaffold.specs import SpecError
from training.config import load_config
from training.rollouts import RolloutRunner

SMOKE = Path(__file__).resolve().parent.parent / "training" / "configs" / "cpu-smoke.yaml"
STAGES = [{"until_step": 2, "difficulty": "easy"}, {"until_step": 4, "difficulty": "medium"}, {"difficulty": "hard"}]


def test_the_stage_of_each_step() -> None:
    config = load_config(SMOKE, {"tasks.curriculum": STAGES})
    assert [config.tasks.difficulty_at(s) for s in range(1, 7)] == ["easy", "easy", "medium", "medium", "hard", "hard"]
    assert load_config(SMOKE).tasks.difficulty_at(3) is None  # no curriculum: the organism's own difficulty


@pytest.mark.parametrize(
    "stages",
    [
        [{"difficulty": "easy"}, {"difficulty": "medium"}],  # an open stage before the last
        [{"until_step": 5, "difficulty": "easy"}, {"until_step": 3, "difficulty": "medium"}, {"difficulty": "hard"}],
        [{"until_step": 2, "difficulty": "trivial"}],
    ],
)
def test_a_bad_curriculum_fails_when_the_config_loads(stages: list[dict[str, object]]) -> None:
    with pytest.raises(SpecError, match="curriculum"):
        load_config(SMOKE, {"tasks.curriculum": stages})


def test_rollouts_audit_organisms_of_the_stages_difficulty(tmp_path: Path) -> None:
    from scaffold.secrets import SecretRegistry

    config = load_config(SMOKE, {"tasks.curriculum": STAGES})
    runner = RolloutRunner(config, sampler=None, judge=None, out=tmp_path, secrets=SecretRegistry())  # type: ignore[arg-type]
    # `step` is TRL's global step, counted from 0 before the update
    assert [runner._target_spec("flattery", s).organism.difficulty for s in (0, 1, 2, 4)] == ["easy", "easy", "medium", "hard"]
