"""The layers show: the core (algorithms, GP engines, the engine, domains, spaces, ask/tell) never imports the
experiment system (the subpackage ``sketchbo.cli``: CLI, jobs, tracking, results, plots), nor hydra or wandb
(docs/architecture.md#layers)."""
import ast
from pathlib import Path

import sketchbo

PACKAGE = Path(sketchbo.__file__).resolve().parent
EXPERIMENT_SYSTEM = "sketchbo.cli"  # the subpackage; python -m sketchbo's entry module is beside it
FORBIDDEN_THIRD_PARTY = {"hydra", "omegaconf", "wandb"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every module an import statement of ``path`` names (``from a import b`` names a and a.b)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return out


def in_experiment_system(module: str) -> bool:
    return module == EXPERIMENT_SYSTEM or module.startswith(EXPERIMENT_SYSTEM + ".") or module == "sketchbo.__main__"


def core_modules() -> dict[str, Path]:
    mods = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {m: p for m, p in mods.items() if not in_experiment_system(m)}


def test_the_core_never_imports_the_experiment_system():
    core = core_modules()
    assert {"sketchbo.api", "sketchbo.engine.run", "sketchbo.domains.box", "sketchbo.spaces"} <= set(core)
    bad = []
    for name, path in sorted(core.items()):
        for imported in imports(path):
            if in_experiment_system(imported) or imported.split(".")[0] in FORBIDDEN_THIRD_PARTY:
                bad.append(f"{name} imports {imported}")
    assert not bad, bad


def test_the_walk_sees_a_forbidden_import(tmp_path):
    """The check can fail: a module that imports tracking is caught."""
    fake = tmp_path / "m.py"
    fake.write_text("from sketchbo.cli import tracking\nimport wandb\n")
    found = imports(fake)
    assert "sketchbo.cli.tracking" in found and "wandb" in found
    assert any(in_experiment_system(m) for m in found) and not in_experiment_system("sketchbo.clinic")


def own_lines(node) -> int:
    """Lines of a function less those of the functions defined in it (a factory of small closures, optax's
    style, is judged by its closures)."""
    def nested(n):
        return sum(c.end_lineno - c.lineno + 1 if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef)) else nested(c)
                   for c in ast.iter_child_nodes(n))

    return node.end_lineno - node.lineno + 1 - nested(node)


def test_no_module_of_the_package_is_over_400_lines_or_has_a_function_over_60():
    long_modules, long_functions = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > 400:
            long_modules.append(f"{module_name(path)}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and own_lines(node) > 60:
                long_functions.append(f"{module_name(path)}.{node.name}: {own_lines(node)} lines")
    assert not long_modules, long_modules
    assert not long_functions, long_functions
