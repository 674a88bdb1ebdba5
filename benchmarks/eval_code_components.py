"""Does "component" match what a project's own documentation calls its parts?

The labels are what three real Python projects document as API in their Sphinx reference:
every `.. class::`/`.. autoclass::` (a class a reader is told about) and every
`.. module::`/`.. automodule::` (a module). They were extracted once from each sdist's docs
and frozen under tests/fixtures/code_components/ (`--freeze`) before the component rule was
measured, let alone tuned; Django is the tuning part, SQLAlchemy and sympy are held out.

Measured on the code index of each sdist (memory_core.ingest.code, the same run as
`memhealth ingest code`):

- class recall: of the documented classes the index has as a class, the share it marks as a
  component (a miss is a documented class the rule calls private or test code);
- module recall: of the documented modules the index has, the share marked as a component
  (a module counts only with a docstring of its own);
- precision at K: of the K most mentioned components, the share that are documented
  (strict: by a directive; loose: the name occurs as a word in the docs at all);
- the share of all definitions that are components ("not every function").

    python benchmarks/eval_code_components.py            # evaluate, print the table
    python benchmarks/eval_code_components.py --freeze   # write the label files (done once)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for _p in (HERE, REPO):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from bench_code_index import CACHE, SDISTS, _extract, fetch  # noqa: E402

LABELS = os.path.join(REPO, "tests", "fixtures", "code_components")
TUNING = ("Django",)
HELD_OUT = ("SQLAlchemy", "sympy")
DOCS_DIR = {"Django": "docs", "SQLAlchemy": "doc", "sympy": "doc"}
_CLASS = re.compile(r"^\s*\.\. (?:auto)?(?:class|exception)::\s+([A-Za-z_][\w.]*)", re.M)
_MODULE = re.compile(r"^\s*\.\. (?:auto)?module::\s+([A-Za-z_][\w.]*)", re.M)
KS = (20, 50, 100)


def _unpack(archive: str, into: str) -> str:
    with tarfile.open(archive) as tar:
        _extract(tar, into)
        top = tar.getnames()[0].split("/")[0]
    return os.path.join(into, top)


def extract_labels(root: str, docs: str) -> dict:
    """Documented classes (last name part) and modules (dotted) from the Sphinx sources."""
    classes, modules = set(), set()
    for dirpath, _dirs, files in os.walk(os.path.join(root, docs)):
        for name in files:
            if not name.endswith((".rst", ".txt", ".md")):
                continue
            with open(os.path.join(dirpath, name), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            classes.update(m.rsplit(".", 1)[-1] for m in _CLASS.findall(text))
            modules.update(_MODULE.findall(text))
    return {"classes": sorted(classes), "modules": sorted(modules)}


def docs_words(root: str, docs: str) -> set[str]:
    words: set[str] = set()
    for dirpath, _dirs, files in os.walk(os.path.join(root, docs)):
        for name in files:
            if name.endswith((".rst", ".txt", ".md")):
                with open(os.path.join(dirpath, name), encoding="utf-8", errors="replace") as fh:
                    words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", fh.read()))
    return words


def freeze() -> None:
    os.makedirs(LABELS, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for (name, version), archive in zip(SDISTS, fetch(), strict=True):
            root = _unpack(archive, tmp)
            data = {"project": name, "version": version, "from": f"{DOCS_DIR[name]}/ of the sdist",
                    "part": "tuning" if name in TUNING else "held-out",
                    **extract_labels(root, DOCS_DIR[name])}
            with open(os.path.join(LABELS, f"{name.lower()}.json"), "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=1)
                fh.write("\n")
            print(name, len(data["classes"]), "classes", len(data["modules"]), "modules")


def _index(root: str):
    from memhealth.config import defaults
    from memory_core.ingest import run_ingest
    from memory_core.store.db import sqlite3
    from memory_core.store.schema import ensure_schema

    env = dict(os.environ, GIT_AUTHOR_NAME="e", GIT_AUTHOR_EMAIL="e@example.org",
               GIT_COMMITTER_NAME="e", GIT_COMMITTER_EMAIL="e@example.org")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "sdist"]):
        subprocess.run(["git", "-C", root, *args], check=True, capture_output=True, env=env, timeout=600)
    conn = sqlite3.connect(os.path.join(root, "eval.db"), isolation_level=None)
    ensure_schema(conn)
    run_ingest(conn, root, defaults(), sources=["code"], budget_s=3600)
    return conn


def _module_path(dotted: str) -> tuple[str, str]:
    base = dotted.replace(".", "/")
    return base + ".py", base + "/__init__.py"


def evaluate_one(name: str, archive: str, tmp: str) -> dict:
    with open(os.path.join(LABELS, f"{name.lower()}.json"), encoding="utf-8") as fh:
        labels = json.load(fh)
    root = _unpack(archive, tmp)
    words = docs_words(root, DOCS_DIR[name])
    conn = _index(root)
    from memory_core.index import code as code_index

    class_rows: dict[str, bool] = {}
    for n, comp in conn.execute("SELECT name, max(component) FROM code_defs WHERE kind = 'class' GROUP BY name"):
        class_rows[n] = bool(comp)
    doc_classes = [c for c in labels["classes"] if c in class_rows]
    class_hits = [c for c in doc_classes if class_rows[c]]
    class_misses = sorted(set(doc_classes) - set(class_hits))

    module_rows = {p: bool(c) for p, c in conn.execute(
        "SELECT path, component FROM code_defs WHERE kind IN ('module', 'package')")}
    doc_modules, module_hits = [], []
    for dotted in labels["modules"]:
        found = [q for p in _module_path(dotted) for q in (p, "lib/" + p) if q in module_rows]
        if found:
            doc_modules.append(dotted)
            if any(module_rows[p] for p in found):
                module_hits.append(dotted)

    documented = set(labels["classes"]) | {m.rsplit(".", 1)[-1] for m in labels["modules"]}
    top = code_index.components(conn)
    precision = {}
    for k in KS:
        head = top[:k]
        precision[k] = (sum(d["name"] in documented for d in head) / max(len(head), 1),
                        sum(d["name"] in words for d in head) / max(len(head), 1))
    (defs,) = conn.execute("SELECT count(*) FROM code_defs").fetchone()
    (comps,) = conn.execute("SELECT count(*) FROM code_defs WHERE component = 1").fetchone()
    conn.close()
    return {"project": name, "part": labels["part"], "doc_classes": len(doc_classes),
            "doc_classes_not_in_index": len(labels["classes"]) - len(doc_classes),
            "class_recall": len(class_hits) / max(len(doc_classes), 1),
            "class_misses": class_misses[:15],
            "doc_modules": len(doc_modules), "module_recall": len(module_hits) / max(len(doc_modules), 1),
            "module_misses": sorted(set(doc_modules) - set(module_hits))[:15],
            "precision": {str(k): v for k, v in precision.items()},
            "top10": [f"{d['kind']} {d['qualname']} ({d['path']})" for d in top[:10]],
            "defs": defs, "components": comps, "component_share": comps / max(defs, 1)}


def evaluate(only: tuple[str, ...] | None = None) -> list[dict]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for (name, _v), archive in zip(SDISTS, fetch(), strict=True):
            if only and name not in only:
                continue
            out.append(evaluate_one(name, archive, os.path.join(tmp, name)))
    return out


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--freeze", action="store_true", help="write the label files")
    parser.add_argument("only", nargs="*", help="project names (default: all)")
    args = parser.parse_args()
    if args.freeze:
        freeze()
    else:
        print(f"sdists from {CACHE}", file=sys.stderr)
        print(json.dumps(evaluate(tuple(args.only) or None), indent=1))
