#!/usr/bin/env python3
"""The shape of the Rust code, as issue 47 measures it: production and test lines per crate (the
engine crate's share), functions over 70 lines, assertions in production code, and import
circles between files (strongly connected groups of two or more files in the graph of
`crate::`, `super::` and `self::` paths). Generated files (`*generated*`, `build.rs` output) and
`#[cfg(test)]` modules are counted as they are marked: a file under `tests/` or `benches/`, a
file its parent declares as a `#[cfg(test)] mod` (and the files below it), and the part of a
file from its first inline test module (`#[cfg(test)] mod tests {`) are test code. An import
of a re-exported name counts as an import of the file that declares it, through any number
of facades. The crates are the workspace's members
(Cargo.toml).

    python3 scripts/code_shape.py [--circles] [--edges] [--long]

--circles lists each circle's files, --edges also the imports inside each (which file uses
which); --long lists the long functions.
"""

import argparse
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
CRATES = sorted(tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["members"])
TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
PATH = re.compile(r"\b(crate|super|self)((?:::\w+)+)")
PUB_USE = re.compile(r"^\s*pub(?:\([^)]*\))?\s+use\s+([^;]+);", re.M)
FN = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:const\s+)?(?:unsafe\s+)?fn\s+(\w+)")
PUB_ITEM = re.compile(r"^pub\s+(?:async\s+)?(?:struct|enum|fn|const|static|type|trait|mod)\s+(\w+)",
                      re.M)
ASSERT = re.compile(r"\b(?:debug_)?assert(?:_eq|_ne)?!")


USE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
# `pub(in crate::x)` limits who sees an item; it is not a use of `crate::x`.
VISIBILITY = re.compile(r"\bpub\(in [^)]*\)")


def expand(tree):
    """The paths of one `use` tree: "a::{b, c::{d, e}}" gives a::b, a::c::d, a::c::e."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    at = tree.find("{")
    if at < 0:
        return [tree]
    prefix, inner = tree[:at], tree[at + 1:tree.rfind("}")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner + ","):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            if inner[start:i]:
                parts.append(inner[start:i])
            start = i + 1
    return [path for part in parts for path in expand(prefix + part)]


def module_of(src, file):
    """A file's module path inside its crate: src/a/b.rs and src/a/b/mod.rs are ("a", "b")."""
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts.pop()
    return tuple(parts)


def test_modules(src, files):
    """The module paths a parent declares `#[cfg(test)] mod name;`: they, and every module
    below them, are test code though they live under src/."""
    found = set()
    for f in files:
        here = module_of(src, f)
        for name in TEST_MOD.findall(f.read_text()):
            found.add(here + (name,))
    return found


def is_test_module(module, tests):
    return any(module[:len(t)] == t for t in tests)


TEST_BLOCK = re.compile(r"^#\[cfg\(test\)\]\s*\n\s*(?:pub(?:\([\w:]+\))? )?mod \w+ \{", re.M)


def split_test(text):
    """(production, test) parts of a file: everything from its first inline test module
    (`#[cfg(test)] mod tests {`) is test. A `#[cfg(test)] mod name;` declaration is not: the
    module is a file of its own, and what follows the declaration is production code."""
    match = TEST_BLOCK.search(text)
    return (text, "") if match is None else (text[:match.start()], text[match.start():])


def long_functions(text, limit=70):
    """(name, lines) of each fn whose body, from its signature to the brace closing at the same
    indentation, is over `limit` lines."""
    lines = text.split("\n")
    found = []
    for i, line in enumerate(lines):
        match = FN.match(line)
        if not match or line.rstrip().endswith(";"):
            continue
        indent = match.group(1)
        for j in range(i + 1, len(lines)):
            if lines[j] == indent + "}":
                if j - i + 1 > limit:
                    found.append((match.group(2), j - i + 1))
                break
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--circles", action="store_true")
    ap.add_argument("--edges", action="store_true")
    ap.add_argument("--long", action="store_true")
    args = ap.parse_args()
    production, tests, generated = {}, {}, 0
    long_fns, asserts = [], 0
    graph = {}
    for crate in CRATES:
        src = ROOT / crate / "src"
        files = sorted(src.rglob("*.rs"))
        modules = {module_of(src, f): f for f in files}
        test_mods = test_modules(src, files)
        production[crate] = tests[crate] = 0
        # A name a module only re-exports (`pub use child::Name;`) belongs to the child: a file
        # using `crate::Name` depends on the child, not on the facade.
        reexports = {}
        for f in files:
            here = module_of(src, f)
            for tree in PUB_USE.findall(f.read_text()):
                for path in expand(tree):
                    parts = tuple(p for p in path.split("::") if p != "self")
                    owner = (modules.get(parts[1:-1]) if parts[0] == "crate"
                             else modules.get(here + parts[:-1]))
                    if owner is None:
                        continue
                    # A glob re-exports every public item the child declares.
                    names = PUB_ITEM.findall(owner.read_text()) if parts[-1] == "*" else [parts[-1]]
                    for name in names:
                        reexports[(f, name)] = owner
        for f in files:
            text = f.read_text()
            if "generated" in f.name or "@generated" in text[:500]:
                generated += text.count("\n")
                continue
            if is_test_module(module_of(src, f), test_mods):
                tests[crate] += text.count("\n")
                continue
            prod, test = split_test(text)
            production[crate] += prod.count("\n")
            tests[crate] += test.count("\n")
            asserts += len(ASSERT.findall(prod))
            long_fns += [(f.relative_to(ROOT), name, n) for name, n in long_functions(prod)]
            here = module_of(src, f)
            node = f.relative_to(ROOT)
            edges = graph.setdefault(node, set())
            references = PATH.findall(VISIBILITY.sub("pub", USE.sub("", prod)))
            for tree in USE.findall(prod):
                for path in expand(tree):
                    first, _, rest = path.partition("::")
                    if first in ("crate", "super", "self"):
                        references.append((first, "::" + rest))
                    elif here + (first,) in modules:  # a child module, named bare
                        references.append(("self", "::" + path))
            for root, rest in references:
                path = rest.strip(":").split("::")
                base = {"crate": (), "self": here, "super": here[:-1]}[root]
                while path and path[0] == "super":
                    base, path = base[:-1], path[1:]
                full = base + tuple(path)
                for cut in range(len(full), -1, -1):
                    target = modules.get(full[:cut])
                    # Through every facade: `crate::Name` re-exported from a re-export.
                    seen = set()
                    while cut < len(full) and (target, full[cut]) in reexports and target not in seen:
                        seen.add(target)
                        target = reexports[(target, full[cut])]
                    if target is not None:
                        if target != f:
                            edges.add(target.relative_to(ROOT))
                        break
        for crate_dir in ("tests", "benches"):
            for f in (ROOT / crate / crate_dir).rglob("*.rs"):
                tests[crate] += f.read_text().count("\n")
    circles = strongly_connected(graph)
    total = sum(production.values())
    print(f"production lines {total}, test lines {sum(tests.values())}, generated {generated}")
    for crate in CRATES:
        print(f"  {crate:12} {production[crate]:6} ({100 * production[crate] / total:.1f} %)"
              f"  tests {tests[crate]}")
    print(f"functions over 70 lines: {len(long_fns)} "
          f"({sum(1 for f, _, _ in long_fns if f.parts[0] == 'engine')} in engine)")
    print(f"assertions in production code: {asserts}")
    print(f"import circles: {len(circles)} (largest {max(map(len, circles), default=0)} files)")
    if args.circles or args.edges:
        for circle in sorted(circles, key=len, reverse=True):
            print("  " + ", ".join(str(f) for f in sorted(circle)))
            for f in sorted(circle) if args.edges else ():
                uses = sorted(str(t) for t in graph[f] if t in circle)
                print(f"    {f} -> {', '.join(uses)}")
    if args.long:
        for f, name, n in sorted(long_fns, key=lambda x: -x[2]):
            print(f"  {n:4} {f}::{name}")


def strongly_connected(graph):
    """Tarjan's algorithm; the groups of two or more nodes."""
    sys.setrecursionlimit(10000)
    index, low, on_stack, stack, groups = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(group)
    for node in list(graph):
        if node not in index:
            visit(node)
    return groups


if __name__ == "__main__":
    main()
