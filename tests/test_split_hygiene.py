"""No auditor can read the ground truth it is graded on.

Statically: no module in auditor/ imports targets/ or rewards/, or names the quirk
files; only the seed loader (auditor/seeds.py) may name YAML at all, and it reads only
its own auditor/seeds/ folder. Dynamically: importing and running every auditor, and
loading the seed library, leaves the quirk loader unimported.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

FORBIDDEN_MODULES = ("targets", "rewards", "evals", "training", "review", "audit")
FORBIDDEN_TEXT = ("quirks/", "ground_truth", "QUIRKS")
# ".yaml" is forbidden in every auditor module; the seed loader may name only its glob.
YAML_TEXT, SEED_LOADER, SEED_GLOB_LITERAL = ".yaml", "seeds.py", '"*.yaml"'


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
            "import_module",
            "__import__",
        ):
            names.append("<dynamic import>")
    return names


def test_auditor_modules_import_no_ground_truth() -> None:
    files = sorted((ROOT / "auditor").rglob("*.py"))
    assert files
    for path in files:
        for name in _imports(path):
            top = name.split(".")[0]
            assert top not in FORBIDDEN_MODULES, f"{path.name} imports {name}"
            assert name != "<dynamic import>", f"{path.name} imports dynamically"
        text = path.read_text()
        for needle in FORBIDDEN_TEXT:
            assert needle not in text, f"{path.name} mentions {needle!r}"
        allowed = path == ROOT / "auditor" / SEED_LOADER
        if allowed:
            assert text.count(SEED_GLOB_LITERAL) == 1, "the seed loader names its glob once"
            text = text.replace(SEED_GLOB_LITERAL, "")
        assert YAML_TEXT not in text, f"{path.name} mentions {YAML_TEXT!r}"


def test_the_seed_library_is_read_from_auditor_seeds_only() -> None:
    from auditor.seeds import SEED_DIR, load_seed_library, seed_files

    seed_dir = (ROOT / "auditor" / "seeds").resolve()
    assert SEED_DIR.resolve() == seed_dir
    files = seed_files()
    assert files and all(f.resolve().parent == seed_dir for f in files)
    assert load_seed_library()
    for f in files:  # the seed data names no quirk file or ground truth either
        text = f.read_text()
        for needle in FORBIDDEN_TEXT:
            assert needle not in text, f"auditor/seeds/{f.name} mentions {needle!r}"


def test_running_the_auditors_never_loads_a_quirk() -> None:
    code = (
        "import asyncio, sys\n"
        "import auditor.build, auditor.heuristic, auditor.prompts, auditor.probes, auditor.seeds\n"
        "assert auditor.seeds.load_seed_library()\n"
        "from auditor.build import build_auditor\n"
        "from scaffold.secrets import SecretRegistry\n"
        "from scaffold.messages import Message\n"
        "a = build_auditor('heuristic', SecretRegistry())\n"
        "asyncio.run(a.generate([Message(role='system', content='x'), Message(role='user', content='go')]))\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('targets', 'rewards')]\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_scaffold_knows_no_quirk_judge_or_trainer() -> None:
    for path in sorted((ROOT / "scaffold").rglob("*.py")):
        for name in _imports(path):
            assert name.split(".")[0] not in ("targets", "rewards", "auditor", "evals", "training", "review", "audit"), (
                f"scaffold/{path.relative_to(ROOT / 'scaffold')} imports {name}"
            )
