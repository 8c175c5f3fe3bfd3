#!/usr/bin/env python3
"""Checks that every #include points down the layers of DESIGN.md's layout.

A file may include its own layer and the layers below it. The engine folders share one layer but
may not include each other (vendor engines share code only through runtime/); the files directly
in src/engines/ (the registry) stand above them all. Prints each arrow that runs up and exits 1.
"""
import pathlib
import re
import sys

# Lowest first: (layer name, path prefix). A file belongs to the longest prefix it starts with.
LAYERS = [
    ("public API", "include/dnngraph/"),
    ("core", "src/core/"),
    ("runtime", "src/runtime/"),
    ("graph", "src/graph/"),
    ("fusion", "src/fusion/"),
    ("planning", "src/planning/"),
    ("engines", "src/engines/"),
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = (".hpp", ".cpp", ".cuh", ".inl", ".h")


def layer_of(path: str):
    """(rank, engine folder or None, is registry level) of a repository path, or None above src/."""
    for rank, (_, prefix) in enumerate(LAYERS):
        if not path.startswith(prefix):
            continue
        if prefix != "src/engines/":
            return rank, None
        rest = path[len(prefix):]
        folder = rest.split("/", 1)[0] if "/" in rest else None
        if folder is None:
            return rank + 1, None  # src/engines/registry.cpp and its neighbours
        return rank, folder
    return None


def resolve(root: pathlib.Path, source: pathlib.Path, name: str):
    """The repository path an include names: beside the file, then under src/ and include/."""
    for base in (source.parent, root / "src", root / "include"):
        candidate = (base / name).resolve()
        if candidate.is_file() and root in candidate.parents:
            return candidate.relative_to(root).as_posix()
    return None


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent
    problems = []
    for top in ("include", "src"):
        for source in sorted((root / top).rglob("*")):
            if source.suffix not in SOURCES:
                continue
            path = source.relative_to(root).as_posix()
            here = layer_of(path)
            for number, line in enumerate(source.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = resolve(root, source, m.group(1))
                if target is None:
                    continue  # generated files (build/generated) and system headers
                there = layer_of(target)
                if there is None:
                    problems.append(f"{path}:{number}: includes {target}, which is outside the library")
                elif there[0] > here[0]:
                    problems.append(f"{path}:{number}: {LAYERS[min(here[0], len(LAYERS) - 1)][0]} includes "
                                    f"{target}, a layer above it")
                elif here[1] and there[1] and here[1] != there[1]:
                    problems.append(f"{path}:{number}: engine folder {here[1]}/ includes {target} of "
                                    f"engine folder {there[1]}/ (engines share code only through lower layers)")
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} include(s) run against the layer order")
        return 1
    print("check_layers: every include points down the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
