"""The seed-instruction library: scenarios that tell an auditor what to probe for, and how.

The seeds are data, one YAML file per category in this module's own `seeds/` folder
(auditor/seeds/sycophancy, auditor/seeds/deception, ...). Each file is a list of
entries `{id, tags, text}`; the first tag of every entry is its category and must be
the file's name. An entry may give `text_from: QUIRK_HUNT_SEED` instead of `text`: its
text is then the constant of that name in auditor/prompts.py (the benchmark's seed,
`quirk-hunt`), so that text lives in one place only.

The loader reads nothing outside that folder: every file it opens must resolve inside
it (tests/test_split_hygiene.py checks that the folder is auditor/seeds).
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from auditor import prompts
from scaffold.specs import SpecError, read_yaml

SEED_DIR = (Path(__file__).resolve().parent / "seeds").resolve()
SEED_GLOB = "*.yaml"  # the only files read, and only inside SEED_DIR
ID_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
# Constants of auditor/prompts.py that an entry may name with `text_from`.
TEXT_CONSTANTS = {"QUIRK_HUNT_SEED": prompts.QUIRK_HUNT_SEED}


class SeedError(SpecError):
    """The seed library is invalid; the message names the file and the seed."""


class UnknownSeedError(SeedError, KeyError):
    """No seed has this id (a KeyError whose message lists close matches)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class Seed(BaseModel):
    """One seed instruction for an auditor."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    tags: tuple[str, ...]
    text: str

    @field_validator("id")
    @classmethod
    def _kebab_id(cls, value: str) -> str:
        if not ID_PATTERN.match(value):
            raise ValueError(f"id {value!r} is not kebab-case (lowercase letters, digits, single hyphens)")
        return value

    @field_validator("tags")
    @classmethod
    def _kebab_tags(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("tags must not be empty: the first tag is the seed's category")
        for tag in value:
            if not ID_PATTERN.match(tag):
                raise ValueError(f"tag {tag!r} is not kebab-case")
        if len(set(value)) != len(value):
            raise ValueError("tags repeat")
        return value

    @field_validator("text")
    @classmethod
    def _non_empty_text(cls, value: str) -> str:
        value = " ".join(value.split())
        if not value:
            raise ValueError("text must not be empty")
        return value

    @property
    def category(self) -> str:
        return self.tags[0]


def seed_files() -> list[Path]:
    """The library's files, each checked to resolve inside SEED_DIR."""
    files = sorted(SEED_DIR.glob(SEED_GLOB))
    for path in files:
        if not path.resolve().is_relative_to(SEED_DIR):
            raise SeedError(f"{path.name}: resolves outside {SEED_DIR}; seeds are read from that folder only")
    if not files:
        raise SeedError(f"no seed files in {SEED_DIR}")
    return files


def _entry_seed(path: Path, index: int, entry: Any) -> Seed:
    where = f"{path.name}: seed #{index + 1}"
    if not isinstance(entry, dict):
        raise SeedError(f"{where}: expected a mapping with id, tags and text")
    entry = dict(entry)
    where = f"{path.name}: seed {entry.get('id', '#' + str(index + 1))!r}"
    if "text_from" in entry:
        name = entry.pop("text_from")
        if "text" in entry:
            raise SeedError(f"{where}: give text or text_from, not both")
        if name not in TEXT_CONSTANTS:
            raise SeedError(f"{where}: text_from {name!r} unknown; choose from {', '.join(TEXT_CONSTANTS)}")
        entry["text"] = TEXT_CONSTANTS[name]
    try:
        seed = Seed.model_validate(entry)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}" for e in exc.errors())
        raise SeedError(f"{where}: {problems}") from None
    if seed.category != path.stem:
        raise SeedError(f"{where}: first tag {seed.category!r} must be the file's category {path.stem!r}")
    return seed


@lru_cache(maxsize=1)
def _library() -> tuple[Seed, ...]:
    seeds: list[Seed] = []
    origin: dict[str, str] = {}
    for path in seed_files():
        try:
            entries = read_yaml(path)
        except SpecError as exc:
            raise SeedError(str(exc)) from None  # it names the file already
        if not isinstance(entries, list) or not entries:
            raise SeedError(f"{path.name}: expected a non-empty list of seeds")
        for index, entry in enumerate(entries):
            seed = _entry_seed(path, index, entry)
            if seed.id in origin:
                raise SeedError(f"{path.name}: seed {seed.id!r} duplicates the one in {origin[seed.id]}")
            origin[seed.id] = path.name
            seeds.append(seed)
    return tuple(seeds)


def load_seed_library() -> list[Seed]:
    """Every seed, ordered by category file then position in it (read once, then cached)."""
    return list(_library())


def get_seed(seed_id: str) -> Seed:
    """The seed with this id; UnknownSeedError (a KeyError) names close matches."""
    for seed in _library():
        if seed.id == seed_id:
            return seed
    ids = [s.id for s in _library()]
    close = difflib.get_close_matches(seed_id, ids, n=5, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see `audit seeds list`"
    raise UnknownSeedError(f"unknown seed {seed_id!r}{hint}")


def seeds_with_tag(tag: str) -> list[Seed]:
    """The seeds carrying `tag` (a category or a modifier such as agentic or prefill)."""
    return [s for s in _library() if tag in s.tags]


def categories() -> list[str]:
    """The categories (first tags), in library order."""
    return list(dict.fromkeys(s.category for s in _library()))


def all_tags() -> list[str]:
    """Every tag in use: the categories first, then the other tags sorted."""
    cats = categories()
    rest = sorted({t for s in _library() for t in s.tags} - set(cats))
    return cats + rest
