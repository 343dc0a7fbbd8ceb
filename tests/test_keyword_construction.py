"""House rule: a frozen result record with more than six fields is built by keyword.

Read over the AST of ``mcviz/``: every frozen dataclass declared there with more than
:data:`MAX_POSITIONAL` fields, and every call that names such a class (``Finding(...)``,
``module.Finding(...)``) with a positional argument. Positional construction of a long record
silently swaps two fields of the same type when the class gains or reorders one (issue #39:
``FixResult`` (19 fields) and ``Finding`` (16) were built positionally).
"""

from __future__ import annotations

import ast
from pathlib import Path

MAX_POSITIONAL = 6
PACKAGE = Path(__file__).resolve().parents[1] / "mcviz"


def _frozen(node: ast.ClassDef) -> bool:
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call) and any(
                k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in decorator.keywords):
            return True
    return False


def _fields(node: ast.ClassDef) -> int:
    return sum(isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
               and "ClassVar" not in ast.unparse(s.annotation) for s in node.body)


def long_records(trees: dict[str, ast.Module]) -> dict[str, int]:
    """Frozen dataclasses with more than MAX_POSITIONAL fields: name -> fields.

    A class's fields include those of the frozen classes it extends (named as its bases).
    """
    own: dict[str, tuple[int, list[str]]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and _frozen(node):
                bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                         for b in node.bases]
                own[node.name] = (max(_fields(node), own.get(node.name, (0,))[0]), bases)

    def count(name: str) -> int:
        fields, bases = own[name]
        return fields + sum(count(base) for base in bases if base in own and base != name)

    return {name: total for name in own if (total := count(name)) > MAX_POSITIONAL}


def positional_constructions(trees: dict[str, ast.Module], records: dict[str, int]) -> list[str]:
    """Calls naming one of ``records`` with a positional argument: ``path:line Name(k args)``."""
    out = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = (func.id if isinstance(func, ast.Name)
                    else func.attr if isinstance(func, ast.Attribute) else None)
            if name in records:
                out.append(f"{path}:{node.lineno} {name}({len(node.args)} positional)")
    return out


def _trees() -> dict[str, ast.Module]:
    return {str(p.relative_to(PACKAGE.parent)): ast.parse(p.read_text(encoding="utf-8"))
            for p in sorted(PACKAGE.rglob("*.py"))}


def test_long_frozen_records_are_built_by_keyword():
    trees = _trees()
    records = long_records(trees)
    # the records the issue names are seen (so the test cannot pass by seeing none)
    assert records.get("Finding", 0) >= 16
    assert records.get("SeriesMonitor", 0) > MAX_POSITIONAL
    assert positional_constructions(trees, records) == []


def test_the_check_sees_positional_and_qualified_calls():
    fields = "\n".join(f"    {name}: int" for name in "abcdefg")  # seven: above the limit
    source = f'''
from dataclasses import dataclass

@dataclass(frozen=True, slots=True)
class Long:
{fields}

@dataclass(frozen=True)
class Short:
    a: int

@dataclass(frozen=True)
class Extended(Short):
{fields}

@dataclass
class Mutable:
{fields}

Long(1, 2, 3, 4, 5, 6, 7)
module.Long(1, b=2, c=3, d=4, e=5, f=6, g=7)
Long(a=1, b=2, c=3, d=4, e=5, f=6, g=7)
Short(1)
Mutable(1, 2, 3, 4, 5, 6, 7)
Extended(1, 2, 3, 4, 5, 6, 7, 8)
'''
    trees = {"x.py": ast.parse(source)}
    records = long_records(trees)
    assert records == {"Long": 7, "Extended": 8}  # its base's field counted
    assert positional_constructions(trees, records) == [
        "x.py:38 Long(7 positional)", "x.py:39 Long(1 positional)",
        "x.py:43 Extended(8 positional)"]
