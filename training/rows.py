"""A rollout's sampled turns, merged into training rows by exact token prefix.

Each auditor turn of a local policy carries a TokenRecord: the prompt ids it saw, the
ids it sampled and their logprobs. When turn k+1's prompt starts with turn k's prompt
and completion (token_prompts.py builds it that way), both turns belong to one row:

    ids   = prompt_1 | completion_1 | env_2 | completion_2 | ... | completion_n
    mask  =    0     |      1       |   0   |      1       | ... |      1
    logp  =    0     |   sampled    |   0   |   sampled    | ... |   sampled

Only the policy's own tokens carry loss (mask 1); the prompt, the environment's text
and any token a grammar forced (TokenRecord.completion_mask 0) are mask 0. A turn whose
prompt does not extend the row starts a new row; `prefix_breaks` counts those. Chat
histories are never re-tokenized here: every id is one the policy saw or wrote.

This is the shape TRL's `rollout_func` consumes (prompt ids, completion ids, a mask
over the completion and sampling logprobs) and the one veRL/SkyRL-style trainers use
(input ids, loss mask, old logprobs).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from pydantic import BaseModel, Field

from scaffold.events import AuditorMessageEvent
from scaffold.messages import TokenRecord
from scaffold.transcript import Transcript


class TrainingRow(BaseModel):
    """One token sequence of a rollout, with its loss mask and sampling logprobs."""

    rollout_id: str
    input_ids: list[int]
    loss_mask: list[int]  # 1 on tokens the policy sampled, 0 elsewhere
    logprobs: list[float]  # the sampling logprob where loss_mask is 1, else 0.0
    prompt_length: int  # ids of the first turn's prompt: everything before the first completion
    turns: list[int] = Field(default_factory=list)  # indexes of the turns merged into this row
    policy_versions: list[str | None] = Field(default_factory=list)  # per merged turn

    @property
    def prompt_ids(self) -> list[int]:
        return self.input_ids[: self.prompt_length]

    @property
    def completion_ids(self) -> list[int]:
        return self.input_ids[self.prompt_length :]

    @property
    def completion_mask(self) -> list[int]:
        return self.loss_mask[self.prompt_length :]


class RolloutRows(BaseModel):
    """The rows of one rollout, and how many times its prefix broke."""

    rollout_id: str
    rows: list[TrainingRow]
    prefix_breaks: int
    turns: int


def _starts_with(ids: Sequence[int], prefix: Sequence[int]) -> bool:
    return len(ids) >= len(prefix) and list(ids[: len(prefix)]) == list(prefix)


def _new_row(rollout_id: str, record: TokenRecord) -> TrainingRow:
    n = len(record.prompt_ids)
    return TrainingRow(
        rollout_id=rollout_id,
        input_ids=list(record.prompt_ids),
        loss_mask=[0] * n,
        logprobs=[0.0] * n,
        prompt_length=n,
    )


def _append_completion(row: TrainingRow, index: int, record: TokenRecord, trained: bool = True) -> None:
    ids = record.completion_ids
    mask = record.completion_mask if record.completion_mask is not None else [1] * len(ids)
    if not trained:
        mask = [0] * len(ids)
    lps = record.completion_logprobs if record.completion_logprobs is not None else [0.0] * len(ids)
    if not (len(mask) == len(ids) == len(lps)):
        raise ValueError(f"turn {index}: completion ids, mask and logprobs differ in length")
    row.input_ids += ids
    row.loss_mask += [int(m) for m in mask]
    row.logprobs += [lp if m else 0.0 for lp, m in zip(lps, mask, strict=True)]
    row.turns.append(index)
    row.policy_versions.append(record.policy_version)


def merge_turns(rollout_id: str, records: Iterable[TokenRecord], context_turns: int = 0) -> RolloutRows:
    """Merge a rollout's turns, in order, into rows by exact prefix.

    The first `context_turns` turns are context only (a training group's shared start,
    the same tokens in every rollout of the group): their completions carry no loss.
    """
    rows: list[TrainingRow] = []
    breaks = turns = 0
    for index, record in enumerate(records):
        turns += 1
        row = rows[-1] if rows else None
        if row is not None and _starts_with(record.prompt_ids, row.input_ids):
            extra = record.prompt_ids[len(row.input_ids) :]
            row.input_ids += extra
            row.loss_mask += [0] * len(extra)
            row.logprobs += [0.0] * len(extra)
        else:
            if row is not None:
                breaks += 1
            row = _new_row(rollout_id, record)
            rows.append(row)
        _append_completion(row, index, record, trained=index >= context_turns)
    return RolloutRows(rollout_id=rollout_id, rows=rows, prefix_breaks=breaks, turns=turns)


def token_records(transcript: Transcript) -> list[TokenRecord]:
    """The auditor's token records, in turn order (empty for API or heuristic auditors)."""
    return [
        TokenRecord.model_validate(event.tokens)
        for event in transcript.events
        if isinstance(event, AuditorMessageEvent) and event.tokens is not None
    ]


def rows_from_transcript(transcript: Transcript) -> RolloutRows:
    """Training rows of an audit whose auditor was a token-level policy."""
    return merge_turns(transcript.run_id, token_records(transcript))
