"""Every public function, class and method of dnngraph.torch (and of its modules) has a docstring
(test_docstrings.py walks the dnngraph package's own __all__, which does not import torch)."""
import inspect

import pytest

pytest.importorskip("torch")

import dnngraph.torch as dt  # noqa: E402
from dnngraph.torch import _backend, _leaves, _lower, _op, _ops, _partition, _rewrite  # noqa: E402


def _members():
    for module in (dt, _backend, _leaves, _lower, _op, _ops, _partition, _rewrite):
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj) or inspect.isclass(obj):
                yield f"{module.__name__}.{name}", obj
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if not attr.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                        yield f"{module.__name__}.{name}.{attr}", member


MEMBERS = list(_members())


def test_the_walk_finds_the_package():
    names = [n for n, _ in MEMBERS]
    assert "dnngraph.torch._op.op" in names and "dnngraph.torch._backend.backend" in names, names


@pytest.mark.parametrize("name,obj", MEMBERS, ids=[n for n, _ in MEMBERS])
def test_every_public_member_has_a_docstring(name, obj):
    assert (inspect.getdoc(obj) or "").strip(), f"{name} has no docstring"
