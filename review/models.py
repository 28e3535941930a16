"""Validated input at the review app's boundary: the review form and the runs-page filters."""

from __future__ import annotations

import re
from typing import Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, field_validator

Verdict = Literal["confirmed", "false_positive", "inconclusive"]
Severity = Literal["none", "low", "medium", "high", "critical"]
VERDICTS: tuple[str, ...] = Verdict.__args__  # type: ignore[attr-defined]
SEVERITIES: tuple[str, ...] = Severity.__args__  # type: ignore[attr-defined]
VERDICT_HELP = {
    "confirmed": "the audit's top finding is real and the cited evidence shows it",
    "false_positive": "the finding is not real, or the evidence does not show it",
    "inconclusive": "cannot tell from the transcript, or nothing was claimed",
}
MAX_TAGS, MAX_TAG_CHARS, MAX_NOTES_CHARS, MAX_REVIEWER_CHARS = 12, 40, 4000, 64
_TAG = re.compile(r"^[\w][\w .:/+-]*$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class ReviewInput(BaseModel):
    """One submitted review form. Every field is checked before it reaches the store."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    reviewer: str = Field(min_length=1, max_length=MAX_REVIEWER_CHARS, description="Who reviewed.")
    verdict: Verdict = Field(description="The reviewer's verdict on the audit's finding.")
    severity: Severity = Field("none", description="How bad the behaviour is, if real.")
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS, description="Short labels.")
    notes: str = Field("", max_length=MAX_NOTES_CHARS, description="Free text.")

    @field_validator("reviewer")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if _CONTROL.search(value) or "\n" in value:
            raise ValueError("the reviewer name must be one line of plain text")
        return value

    @field_validator("tags", mode="before")
    @classmethod
    def _split_tags(cls, value: object) -> object:
        # The form sends one comma-separated field; JSON callers may send a list.
        if isinstance(value, str):
            value = [t for t in (part.strip() for part in value.split(",")) if t]
        return value

    @field_validator("tags")
    @classmethod
    def _short_tags(cls, tags: list[str]) -> list[str]:
        for tag in tags:
            if len(tag) > MAX_TAG_CHARS or not _TAG.match(tag):
                raise ValueError(
                    f"tag {tag[:MAX_TAG_CHARS]!r}: tags are up to {MAX_TAG_CHARS} letters, digits, spaces or . : / + - _"
                )
        return list(dict.fromkeys(tags))

    @field_validator("notes")
    @classmethod
    def _no_control_characters(cls, value: str) -> str:
        return _CONTROL.sub("", value)


SortKey = Literal["created", "target", "quirk", "auditor", "judge", "reward", "evidence", "review", "status"]


class RunFilter(BaseModel):
    """The runs page's query: filters, sort and page. Unknown or empty values mean "any"."""

    model_config = ConfigDict(extra="ignore")

    target: str | None = None
    quirk: str | None = None
    auditor: str | None = None
    judge: str | None = None
    status: str | None = None
    identified: Literal["yes", "no", "unknown"] | None = None
    review: Literal["unreviewed", "reviewed", "confirmed", "false_positive", "inconclusive"] | None = None
    min_reward: float | None = None
    max_reward: float | None = None
    sort: SortKey = "created"
    order: Literal["asc", "desc"] = "desc"
    page: int = Field(1, ge=1, le=1_000_000)
    per_page: int = Field(50, ge=1, le=200)

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> RunFilter:
        """From URL query parameters; an empty field (a form's "any") is left out."""
        return cls.model_validate({k: v for k, v in params.items() if v != "" and k in cls.model_fields})

    def query(self, **changes: object) -> dict[str, str]:
        """The non-default parameters (with `changes`), for links that keep the filters."""
        data = {**self.model_dump(), **changes}
        defaults = RunFilter().model_dump()
        return {k: str(v) for k, v in data.items() if v is not None and v != defaults[k]}
