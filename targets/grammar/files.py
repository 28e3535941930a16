"""One pydantic model per YAML file in a directory, by id: how families and situations are read."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from scaffold.specs import SpecError, describe_validation_error, load_yaml_file

M = TypeVar("M", bound=BaseModel)


def load_models(directory: Path, model: type[M], noun: str) -> dict[str, M]:
    """Each `<id>.yaml` in `directory` validated as `model`, by id (sorted); a file whose `id` is not its
    name, or that does not validate, is a SpecError naming the file and the field."""
    out: dict[str, M] = {}
    for path in sorted(directory.glob("*.yaml")):
        try:
            item = model.model_validate(load_yaml_file(path))
        except ValidationError as exc:
            raise SpecError(describe_validation_error(exc, f"{noun} file {path}")) from None
        if getattr(item, "id") != path.stem:
            raise SpecError(f"{noun} file {path}: field 'id' is {getattr(item, 'id')!r} but the file is named {path.stem!r}")
        out[path.stem] = item
    if not out:
        raise SpecError(f"no {noun} files in {directory}")
    return out
