"""Every public function, method and property of the dnngraph package has a docstring, and a bound
method's docstring names each of its arguments (issue #19: help() and editors show what a call
does, takes and raises). Walks the extension module through nanobind's __nb_signature__, which
gives each overload's own docstring (None when .def was given none), and the Python modules
through inspect."""
import ast
import inspect
import re

import pytest

import dnngraph
from dnngraph import _cli, _dnngraph

# Methods bound in python/src/pack.cpp, which another change owns (issue #19); each is listed with
# what its docstring lacks. Remove an entry once pack.cpp gives the method a full docstring.


def _parameters(signature):
    """The argument names of a nanobind signature string ('def f(self, x: int = \\0) -> T'), self
    and cls left out."""
    text = re.sub(r"\\\d+", "...", signature)
    tree = ast.parse(text + ": ...")
    fn = tree.body[0]
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    return [n for n in names if n not in ("self", "cls")]


def _bound_problems(qualname, func):
    """What the docstrings of a nanobind function's overloads lack; [] when nothing."""
    problems = []
    for signature, doc, _defaults in func.__nb_signature__:
        if not doc or not doc.strip():
            problems.append(f"{qualname}: {signature!r} has no docstring")
            continue
        for name in _parameters(signature):
            if not re.search(rf"\b{re.escape(name)}\b", doc):
                problems.append(f"{qualname}: the docstring of {signature!r} does not name argument '{name}'")
    return problems


def _extension_members():
    """(qualified name, object) of every public callable and property of dnngraph._dnngraph."""
    for name, obj in vars(_dnngraph).items():
        if name.startswith("_") or not callable(obj):
            continue
        yield name, obj
        if isinstance(obj, type):
            for attr, member in vars(obj).items():
                if attr in ("__init__", "__new__") or not attr.startswith("_"):
                    yield f"{name}.{attr}", member


def test_every_bound_function_method_and_property_has_a_docstring_naming_its_arguments():
    problems = []
    checked = 0
    for qualname, obj in _extension_members():
        if isinstance(obj, property):
            checked += 1
            if not (obj.__doc__ or "").strip():
                problems.append(f"{qualname}: property without a docstring")
        elif hasattr(obj, "__nb_signature__"):
            checked += 1
            problems += _bound_problems(qualname, obj)
        elif isinstance(obj, type):
            checked += 1
            if not (obj.__doc__ or "").strip():
                problems.append(f"{qualname}: class without a docstring")
    assert checked > 150, f"the walk found only {checked} members: is it looking at the module?"
    assert not problems, "\n".join(problems)


def test_the_walk_catches_a_missing_docstring_and_an_unnamed_argument():
    # The checks themselves, on a method known to lack a docstring and one with a full one.
    class Undocumented:
        __nb_signature__ = (("def f(self, x: int) -> None", None, None),)
        __doc__ = None

    assert _bound_problems("x", Undocumented())
    assert not _bound_problems("x", dnngraph.pygraph.tensor)
    assert _parameters("def f(self, dim: collections.abc.Sequence[int], stride: int | None = \\0) -> T") == [
        "dim", "stride"]


def _python_members():
    """(name, object) of the public functions, classes and methods written in Python."""
    for name in dnngraph.__all__:
        obj = getattr(dnngraph, name)
        if getattr(obj, "__module__", "").startswith("dnngraph._dnngraph"):
            continue
        if inspect.isfunction(obj) or inspect.isclass(obj):
            yield name, obj
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                    yield f"{name}.{attr}", member
    yield "_cli.main", _cli.main
    yield "_cli.program", _cli.program


@pytest.mark.parametrize("name,obj", list(_python_members()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_public_python_function_and_class_has_a_docstring(name, obj):
    assert (inspect.getdoc(obj) or "").strip(), f"{name} has no docstring"
