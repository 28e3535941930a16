"""Shared fixtures: scripted auditors for driving the real audit graph."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable, Iterator, Sequence

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from scaffold.messages import Message, ToolCall  # noqa: E402
from tests.pg_server import postgres_unavailable, run_postgres  # noqa: E402

Step = list[tuple[str, dict]]


def script_auditor(steps: Sequence[Step]) -> Callable:
    """A reply function that plays `steps` (one list of (tool, args) per turn), then ends."""

    def reply(messages, tools, config):
        turn = sum(1 for m in messages if m.role == "assistant")
        if turn >= len(steps):
            return Message(role="assistant", tool_calls=[ToolCall(id=f"end{turn}", name="end_conversation")])
        calls = [ToolCall(id=f"c{turn}.{i}", name=name, arguments=args) for i, (name, args) in enumerate(steps[turn])]
        return Message(role="assistant", content=f"turn {turn}", tool_calls=calls)

    return reply


def echo_target(messages, tools, config):
    """A target that says which user message it answers."""
    last_user = next((m.content for m in reversed(messages) if m.role == "user"), "")
    return Message(role="assistant", content=f"echo: {last_user}")


@pytest.fixture
def examples_dir() -> Path:
    return ROOT / "targets" / "examples"


def pytest_collection_modifyitems(config, items):
    """`gpu` tests skip cleanly where there is no CUDA device."""
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if has_gpu:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def offline_grader_or_skip():  # type: ignore[no-untyped-def]
    """The offline MiniLM grader; the test skips (saying why) where its package is missing."""
    pytest.importorskip("sentence_transformers", reason="the offline judge needs sentence-transformers")
    from rewards.embedding_grader import EmbeddingQuirkGrader
    from scaffold.minilm import packaged_model_path
    from scaffold.specs import SpecError

    try:
        packaged_model_path()
    except SpecError as exc:
        pytest.skip(str(exc))
    return EmbeddingQuirkGrader()


@pytest.fixture
def package_quirks_only():  # type: ignore[no-untyped-def]
    """Quirks from the package only, before and after the test (a test may add directories)."""
    from targets.quirks import use_quirk_dirs

    use_quirk_dirs([])
    yield
    use_quirk_dirs([])


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A server's URL as a user writes it (`postgresql://`, no driver named), one throwaway
    server per test module (`tests/pg_server.py`); skips where PostgreSQL is not installed."""
    reason = postgres_unavailable()
    if reason:
        pytest.skip(reason)
    for url in run_postgres():
        yield url.replace("postgresql+psycopg://", "postgresql://")
