"""The type stubs (vkgmm/__init__.pyi) say what the package is: every name, signature, property and plan
attribute they declare exists at run time in that form, and every public name the package has is in them."""

import ast
import inspect
import os
import re

import numpy as np
import pytest

import vkgmm

STUBS = ast.parse(open(os.path.join(os.path.dirname(vkgmm.__file__), "__init__.pyi")).read())
KINDS = {"POSITIONAL_OR_KEYWORD": "pos", "POSITIONAL_ONLY": "pos", "KEYWORD_ONLY": "kw",
         "VAR_POSITIONAL": "var", "VAR_KEYWORD": "varkw"}


def stub_parameters(fn: ast.FunctionDef, method: bool):
    """(name, kind, has a default) of each parameter a stub declares, self left out."""
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + a.defaults
    out = [(p.arg, "pos", d is not None) for p, d in zip(positional, defaults)]
    if a.vararg:
        out.append((a.vararg.arg, "var", False))
    out += [(p.arg, "kw", d is not None) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        out.append((a.kwarg.arg, "varkw", False))
    static = any(ast.unparse(d) == "staticmethod" for d in fn.decorator_list)
    return out[1:] if method and not static else out


def pybind_parameters(obj):
    """The same from the signature line pybind11 writes atop a bound function's docstring ("name(self: T,
    a: int, *, b: str = 'x') -> R"); None for an overloaded function, which has no single line."""
    lines = (obj.__doc__ or "").strip().splitlines()
    m = re.match(r"^\w+\((.*)\) -> ", lines[0]) if lines else None
    if not m:
        return None
    params, depth, current = [], 0, ""
    for ch in m.group(1):  # split at the commas outside brackets (List[int], defaults like (1, 2))
        depth += ch in "[(" and 1 or ch in "])" and -1 or 0
        if ch == "," and depth == 0:
            params.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        params.append(current.strip())
    out, keyword_only = [], False
    for p in params:
        if p == "*":
            keyword_only = True
            continue
        out.append((re.split(r"[:=]", p)[0].strip(), "kw" if keyword_only else "pos", " = " in p))
    return out


def runtime_parameters(obj):
    """The same of a run-time callable (Python's, or pybind11's from its docstring), or None where it has
    no single signature (pybind's overloads)."""
    try:
        sig = inspect.signature(obj)
        out = [(p.name, KINDS[p.kind.name], p.default is not inspect.Parameter.empty) for p in sig.parameters.values()]
    except (TypeError, ValueError):
        out = pybind_parameters(obj)
        if out is None:
            return None
    return out[1:] if out and out[0][0] == "self" else out


def stub_nodes(kind):
    return [n for n in STUBS.body if isinstance(n, kind)]


def test_module_names_are_the_stubs():
    declared = {n.name for n in stub_nodes((ast.FunctionDef, ast.ClassDef))}
    declared |= {n.target.id for n in stub_nodes(ast.AnnAssign)}
    aliases = {t.id for n in stub_nodes(ast.Assign) for t in n.targets}  # the stubs' own type aliases
    public = {n for n in dir(vkgmm) if not n.startswith("_")}
    # The package's submodules are not API (vkgmm._ops ...: private names; numpy and others imported
    # into it would show here and fail, as they should).
    assert public - declared == set(), "public at run time but not in the stubs"
    assert set(vkgmm.__all__) <= declared | aliases, "in __all__ but not in the stubs"
    missing = {name for name in declared if not hasattr(vkgmm, name)}
    assert missing == set(), "in the stubs but not at run time"


@pytest.mark.parametrize("fn", stub_nodes(ast.FunctionDef), ids=lambda f: f.name)
def test_function_signatures(fn):
    got = runtime_parameters(getattr(vkgmm, fn.name))
    if got is not None:
        assert got == stub_parameters(fn, method=False)


@pytest.mark.parametrize("cls", stub_nodes(ast.ClassDef), ids=lambda c: c.name)
def test_class_members(cls):
    runtime = getattr(vkgmm, cls.name)
    for item in cls.body:
        if not isinstance(item, ast.FunctionDef):
            continue
        attr = inspect.getattr_static(runtime, item.name, None)
        assert attr is not None, f"{cls.name}.{item.name}"
        decorators = [ast.unparse(d) for d in item.decorator_list]
        if "property" in decorators:
            assert isinstance(attr, property) or type(attr).__name__ == "pybind11_property", f"{cls.name}.{item.name}"
            continue
        got = runtime_parameters(getattr(runtime, item.name))
        if got is not None:
            assert got == stub_parameters(item, method=True), f"{cls.name}.{item.name}"


def plan_instances():
    """One of each plan class, on small operands."""
    lhs, rhs, sizes = np.ones((8, 4), np.float32), np.ones((2, 4, 6), np.float32), [3, 5]
    ids = np.zeros((8, 1), np.int32)
    return [vkgmm.GmmPlan(lhs, rhs, sizes), vkgmm.TgmmPlan(lhs.T, np.ones((8, 6), np.float32), sizes),
            vkgmm.GmmBackwardPlan(lhs, rhs, sizes), vkgmm.IdsGmmPlan(lhs, rhs, ids)]


def test_plan_attributes_are_the_stubs(ctx):
    classes = {c.name: c for c in stub_nodes(ast.ClassDef)}
    for plan in plan_instances():
        name = type(plan).__name__
        declared = {i.target.id for i in classes[name].body if isinstance(i, ast.AnnAssign)}
        public = {a for a in vars(plan) if not a.startswith("_")}
        assert public == declared, name
