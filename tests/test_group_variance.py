"""training.group_variance: the share of a run's reward variance that GRPO's advantages see."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from training.group_variance import main, run_groups, variance_split


def test_only_the_spread_within_groups_counts() -> None:
    apart = variance_split([[0.0, 1.0], [0.0, 1.0]])  # every group split evenly: all of it is within
    assert apart == {"groups": 2, "told_apart": 2, "within_share": pytest.approx(1.0), "within_std": pytest.approx(0.5)}
    between = variance_split([[0.0, 0.0], [1.0, 1.0]])  # each group agrees: the advantages are all 0
    assert between["told_apart"] == 0 and between["within_share"] == 0.0 and between["within_std"] == 0.0
    mixed = variance_split([[0.0, 0.0], [0.0, 1.0]])  # mean 0.25; total 0.75, within 0.5
    assert mixed["told_apart"] == 1 and mixed["within_share"] == pytest.approx(0.5 / 0.75)


def test_groups_are_read_in_batch_order_and_unscored_ones_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"name": "t", "policy": {"base": "tiny-random"}, "group_size": 2}))
    rewards = {(1, 0): 0.0, (1, 1): 0.0, (1, 2): 1.0, (1, 3): 0.0, (2, 0): None, (2, 1): 1.0}
    lines = [{"step": s, "run_id": f"s{s - 1:05d}-{i:03d}-q-abcd", "reward": r} for (s, i), r in rewards.items()]
    lines.insert(0, lines.pop(2))  # rollouts finish out of order; their index says where they were in the batch
    (tmp_path / "rollouts.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n{torn")
    assert sorted(run_groups(tmp_path)) == [[0.0, 0.0], [1.0, 0.0]]
    assert run_groups(tmp_path, first=2) == []  # step 2's only group has an unscored rollout
    main([str(tmp_path)])
    assert f"| {tmp_path.name} | 1- | 2 | 1 | 0.67 | 0.250 |" in capsys.readouterr().out
