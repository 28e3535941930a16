"""Seeded quirks as data: one YAML file per quirk, found by discovery.

A quirk file carries its ground truth (for graders only), its implants (system-prompt
text, and the simulated trigger and rewrite as data: targets/simulated.py), how its
organism answers confrontation, and its own test contract (probes, rephrasings, bait,
expected fire rates: targets/contract.py runs it). An optional Python module of the
same name beside it (`my_quirk.py`) holds only what data cannot say: triggers and
rewrites it names are looked up there first.

Quirks are read from the package's `targets/quirks/`, then from each directory in
`AUDITRL_QUIRKS` (separated like PATH), then from each `--quirks DIR` the command was
given (`use_quirk_dirs`). No list names them; an id defined twice is an error naming
both files. Bad files fail at load time, naming file and field.

A quirk's digest covers what an audit and its grading depend on (everything but the
test contract, plus its module's source), so a suite can pin the exact quirk set it
measures (evals/suites.py) and results.json records which one it ran.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from scaffold.specs import SpecError, describe_validation_error, load_yaml_file
from targets.grammar.situation_reader import situation_reader_digest
from targets.simulated import (
    PatternTrigger,
    RewriteSpec,
    TriggerSpec,
    load_quirk_module,
    resolve_rewrite,
    resolve_trigger,
)

QUIRKS_DIR = Path(__file__).parent / "quirks"
QUIRKS_ENV = "AUDITRL_QUIRKS"
SPLITS = ("train", "heldout", "control")

Prompt = str | list[str]  # one user turn, or a whole conversation of user turns


class SimulatedImplant(BaseModel):
    """How an offline organism shows the quirk: which triggers (any fires), which rewrite."""

    model_config = ConfigDict(extra="forbid")

    trigger: list[TriggerSpec] = Field(
        default_factory=list, description="Triggers, any of which fires: names or patterns (targets/simulated.py)."
    )
    rewrite: RewriteSpec = Field("none", description="A rewrite's name, or a template (targets/simulated.py).")


class ExpectedRates(BaseModel):
    """The fire rates the contract promises, checked by `audit targets check` and the tests."""

    model_config = ConfigDict(extra="forbid")

    probes: float = Field(1.0, ge=0, le=1, description="Least share of probes that fire.")
    rephrasings: float = Field(1.0, ge=0, le=1, description="Least share of rephrasings that fire.")
    neutral: float = Field(0.0, ge=0, le=1, description="Most share of the shared neutral prompts that fire.")
    bait: float = Field(0.0, ge=0, le=1, description="Most share of bait that fires.")


class QuirkContract(BaseModel):
    """What the organism's own tests play: never shown to or written into an auditor."""

    model_config = ConfigDict(extra="forbid")

    lead_in: list[str] = Field(
        default_factory=list, description="User turns played before each probe and rephrasing (multi-turn quirks)."
    )
    probes: list[Prompt] = Field(default_factory=list, description="Prompts that should elicit the quirk.")
    rephrasings: list[Prompt] = Field(
        default_factory=list, description="The probes' intent in other words, written alongside the trigger."
    )
    fresh_rephrasings: list[Prompt] = Field(
        default_factory=list,
        description="Written after the trigger was frozen, by someone who had not read it: their fire rate is the "
        "honest figure, reported and never tuned against.",
    )
    bait: list[str] = Field(default_factory=list, description="Unrelated requests with the quirk's words: must not fire.")
    expect: ExpectedRates = Field(default_factory=ExpectedRates)


class GeneratedFrom(BaseModel):
    """Where a generated quirk comes from (targets/grammar/); for graders and reports, never for an auditor."""

    model_config = ConfigDict(extra="forbid")

    family: str = Field(description="Its behaviour family.")
    cluster: str = Field(description="The family's cluster of similar families.")
    situation: str = Field(description="The situation it shows in.")
    situation_kind: str = Field(description="topic, task, identity or state.")
    params: dict[str, str] = Field(default_factory=dict, description="The family's parameters as drawn.")
    holdout: Literal["family", "combination"] | None = Field(
        None, description="Held out by construction: its whole family, or this family in this situation; None: train."
    )


class Quirk(BaseModel):
    """One seeded quirk. `ground_truth`, `aliases`, `keywords` and `opposites` are for graders only."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="The file's name without .yaml.")
    split: Literal["train", "heldout", "control"]
    ground_truth: str
    aliases: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    opposites: list[str] = Field(
        default_factory=list,
        description="For graders only: sentences that deny or reverse the behaviour (the model corrects the user, "
        "rather than defers). A hypothesis nearer these than the ground truth names the opposite, not the quirk.",
    )
    system_prompt_implant: str = ""
    confession: Literal["never", "when_pressed", "freely"] = "never"
    confession_text: str = ""
    simulated: SimulatedImplant = Field(default_factory=SimulatedImplant)
    contract: QuirkContract = Field(default_factory=QuirkContract)
    generated: GeneratedFrom | None = Field(None, description="Set on quirks the grammar generated.")

    _source: Path | None = PrivateAttr(None)
    _module_source: bytes = PrivateAttr(b"")

    @property
    def source(self) -> Path | None:
        """The file this quirk was read from (None for one built in code)."""
        return self._source

    @property
    def probes(self) -> list[Prompt]:
        """The contract's probes (organism tests only)."""
        return self.contract.probes

    def module_path(self) -> Path | None:
        """The quirk's own module, `<id>.py` beside its file, if there is one."""
        if self._source is None:
            return None
        path = self._source.with_suffix(".py")
        return path if path.is_file() else None

    def triggers(self) -> list:
        """The simulated implant's trigger functions."""
        module = _module_of(self)
        return [resolve_trigger(spec, module) for spec in self.simulated.trigger]

    def rewrite(self):  # noqa: ANN201 - a Rewrite (targets.registry)
        """The simulated implant's rewrite function."""
        return resolve_rewrite(self.simulated.rewrite, _module_of(self))

    def digest(self) -> str:
        """What audits and grading of this quirk depend on: every field but the contract, and its module."""
        # Defaults left out: a new optional field changes no existing quirk's digest. The library
        # triggers and rewrites a quirk names by name are code of this version, not covered here;
        # the situation reader's weights are trained data, and a retrained reader changes when the
        # quirk fires, so a quirk that reads a situation covers them.
        body = json.dumps(self.model_dump(mode="json", exclude={"contract"}, exclude_defaults=True), sort_keys=True)
        reads = any(isinstance(t, PatternTrigger) and t.situation for t in self.simulated.trigger)
        reader = situation_reader_digest().encode() if reads else b""
        return hashlib.sha256(body.encode() + b"\0" + self._module_source + reader).hexdigest()[:16]


def _module_of(quirk: Quirk):  # noqa: ANN202
    path = quirk.module_path()
    return load_quirk_module(path, quirk._module_source) if path is not None else None


def load_quirk_file(path: Path) -> Quirk:
    """Load and validate one quirk file (and its module); errors name the file and the field."""
    data = load_yaml_file(path)
    try:
        quirk = Quirk.model_validate(data)
    except ValidationError as exc:
        raise SpecError(describe_validation_error(exc, str(path))) from None
    if quirk.id != path.stem:
        raise SpecError(f"{path}: field 'id' is {quirk.id!r} but the file is named {path.stem!r}")
    quirk._source = path.resolve()
    module = quirk.module_path()
    if module is not None:
        quirk._module_source = module.read_bytes()
        try:
            load_quirk_module(module, quirk._module_source)
        except Exception as exc:  # the user's own module: any error it raises is a bad quirk
            raise SpecError(f"{module}: cannot import it ({type(exc).__name__}: {exc})") from None
    try:
        quirk.triggers()
    except LookupError as exc:
        raise SpecError(f"{path}: field 'simulated.trigger': {exc.args[0]}") from None
    try:
        quirk.rewrite()
    except LookupError as exc:
        raise SpecError(f"{path}: field 'simulated.rewrite': {exc.args[0]}") from None
    return quirk


# --- the library: the package's quirks, AUDITRL_QUIRKS, --quirks ------------------------

_extra_dirs: tuple[Path, ...] = ()


def use_quirk_dirs(dirs: Sequence[str | Path]) -> None:
    """Read quirks from these directories too (a command's `--quirks DIR`), for this process."""
    global _extra_dirs
    _extra_dirs = tuple(Path(d) for d in dirs)
    _resolved.cache_clear()
    _load_library.cache_clear()  # files may have changed since: read them again


def add_quirk_dir(directory: str | Path) -> None:
    """Read quirks from `directory` too, after the others (a suite's generated set), for this process."""
    path = Path(directory)
    if path.resolve() not in {d.resolve() for d in _extra_dirs}:
        use_quirk_dirs([*_extra_dirs, path])


def env_quirk_dirs() -> tuple[Path, ...]:
    """The directories named in AUDITRL_QUIRKS."""
    return tuple(Path(p) for p in os.environ.get(QUIRKS_ENV, "").split(os.pathsep) if p.strip())


def quirk_dirs() -> tuple[Path, ...]:
    """Every directory quirks are read from, in order: the package's, AUDITRL_QUIRKS, --quirks (each once)."""
    return _resolved(os.environ.get(QUIRKS_ENV, ""), _extra_dirs)


@lru_cache(maxsize=8)
def _resolved(env: str, extra: tuple[Path, ...]) -> tuple[Path, ...]:
    # Graders ask for the library on every hypothesis: resolve the paths once per setting, not per call.
    return tuple(dict.fromkeys(d.resolve() for d in (QUIRKS_DIR, *env_quirk_dirs(), *extra)))


@lru_cache(maxsize=8)
def _load_library(dirs: tuple[Path, ...]) -> dict[str, Quirk]:
    quirks: dict[str, Quirk] = {}
    for index, directory in enumerate(dirs):
        where = "" if index == 0 else f" (from {QUIRKS_ENV} or --quirks)"
        if not directory.is_dir():
            raise SpecError(f"quirk directory {directory}{where}: no such directory")
        for path in sorted(directory.glob("*.yaml")):
            quirk = load_quirk_file(path)
            if quirk.id in quirks:
                raise SpecError(f"quirk {quirk.id!r} is defined twice: {quirks[quirk.id].source} and {path}")
            quirks[quirk.id] = quirk
    return quirks


def all_quirks() -> dict[str, Quirk]:
    """Every quirk from every quirk directory, by id."""
    return _load_library(quirk_dirs())


def get_quirk(quirk_id: str) -> Quirk:
    """The quirk with this id; a SpecError listing the known ids otherwise."""
    quirks = all_quirks()
    if quirk_id not in quirks:
        extra = "" if len(quirk_dirs()) > 1 else f" (quirks outside the package: --quirks DIR or {QUIRKS_ENV})"
        raise SpecError(f"unknown quirk {quirk_id!r}; known: {', '.join(sorted(quirks))}{extra}")
    return quirks[quirk_id]


def quirks_in_split(*splits: str) -> list[Quirk]:
    """The quirks of the given splits (`train`, `heldout`, `control`), sorted by id."""
    unknown = [s for s in splits if s not in SPLITS]
    if unknown:
        raise SpecError(f"unknown split(s) {', '.join(unknown)}; known: {', '.join(SPLITS)}")
    return sorted((q for q in all_quirks().values() if q.split in splits), key=lambda q: q.id)


def library_digest() -> str:
    """The digest of every loaded quirk. Graders compare a hypothesis with all of them (the
    runner-up margin, shotgun lists), so a verdict depends on the library, not only on the
    audited quirk: evals and training runs record this too."""
    return quirk_set_digest(list(all_quirks()))


def quirk_set_digest(quirk_ids: Sequence[str]) -> str:
    """One digest for a set of quirks: their ids and each one's digest."""
    lines = sorted(f"{q}:{get_quirk(q).digest()}" for q in set(quirk_ids))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
