"""Finishes the stub that nanobind's stubgen writes for dnngraph._dnngraph (python/CMakeLists.txt runs
it after stubgen), where stubgen's output does not type-check as it stands:

- pygraph has a method named `tensor`, so inside `class pygraph:` the bare annotation `tensor`
  means that method, not the class (mypy: 'Function ... is not valid as a type'). There, the
  annotations name `_tensor`, an alias of the class declared at the end of the stub.
- GraphNotSupportedError is made with PyErr_NewException under the name dnngraph.*, so stubgen
  imports it from `dnngraph`, whose __init__ imports it from here: a cycle mypy cannot resolve.
  It becomes a class declared here.
- stubgen leaves out dunder attributes, so `__version__` (which dnngraph/__init__.py re-exports)
  is declared.

Usage: python stub_fixups.py <stubgen output> <finished stub>. Fails, naming what it expected,
when stubgen's output no longer has the shape fixed here (so a nanobind update cannot silently
leave a broken stub)."""
import re
import sys

ERROR_IMPORT = "from dnngraph import GraphNotSupportedError as GraphNotSupportedError\n"
ERROR_CLASS = '''class GraphNotSupportedError(RuntimeError):
    """
    No engine supports (a part of) the graph. A RuntimeError; `.code` is
    error_code.GRAPH_NOT_SUPPORTED.
    """

    code: error_code
'''
SUFFIX = '''
__version__: str

# The class `tensor`, for annotations inside `class pygraph:`, where its method tensor() hides the name.
_tensor = tensor
'''


def fix(text: str) -> str:
    if ERROR_IMPORT not in text:
        raise SystemExit(f"stub_fixups: the stub no longer imports GraphNotSupportedError as {ERROR_IMPORT!r}")
    text = text.replace(ERROR_IMPORT, "")
    # After the error_code enum, which the class's `code` names.
    anchor = "\nclass build_plan_policy(enum.Enum):"
    if anchor not in text:
        raise SystemExit(f"stub_fixups: no {anchor.strip()!r} in the stub")
    text = text.replace(anchor, "\n" + ERROR_CLASS + "\n" + anchor, 1)

    start = text.find("\nclass pygraph:")
    if start < 0:
        raise SystemExit("stub_fixups: no 'class pygraph:' in the stub")
    end = text.find("\nclass ", start + 1)
    end = len(text) if end < 0 else end
    body = text[start:end]
    # Only signature lines carry annotations; the method's own name ('def tensor(') stays.
    body = re.sub(r"^(\s*def .*)$", lambda m: re.sub(r"(?<!def )\btensor\b", "_tensor", m.group(1)), body,
                  flags=re.M)
    if "_tensor" not in body:
        raise SystemExit("stub_fixups: 'class pygraph:' names no tensor in its signatures")
    return text[:start] + body + text[end:] + SUFFIX


def main() -> None:
    source, target = sys.argv[1:3]
    with open(source, encoding="utf-8") as f:
        text = fix(f.read())
    with open(target, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
