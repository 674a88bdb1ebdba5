"""Span names and attributes have one definition (telemetry/span_catalog.py), as metric names
do: every attribute-shaped literal in the source is in the catalog, every catalog entry is
written somewhere, and the OpenTelemetry-convention names are the convention's own."""

from __future__ import annotations

import ast
import os
import re

from telemetry.span_catalog import SPAN_ATTRIBUTE_PREFIXES, SPAN_ATTRIBUTES, SPANS
from tests.conftest import REPO

PACKAGES = ("memory_core", "probes", "telemetry", "memhealth")
SHAPE = re.compile(r"^(memhealth|db|gen_ai|session|server|error|service|code|http|url)\.[a-z][a-z0-9_.]*$")
NOT_ATTRIBUTES = {"memhealth.cmd_", "memhealth.capture_worker",  # module names of the same shape
                  # the code index's meta keys (memory_core.ingest.code)
                  "code.commit", "code.indexed_ns", "code.parser", "code.scope",
                  # the code leg's meta key (memory_core.delivery.exists)
                  "code.common_name_words"}


def literals() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for package in PACKAGES:
        for dirpath, _dirs, files in os.walk(os.path.join(REPO, package)):
            for name in files:
                if not name.endswith(".py") or name == "span_catalog.py":
                    continue
                path = os.path.join(dirpath, name)
                for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and SHAPE.match(node.value):
                        found.setdefault(node.value, set()).add(os.path.relpath(path, REPO))
    return found


def known(name: str) -> bool:
    return (name in SPAN_ATTRIBUTES or name in NOT_ATTRIBUTES
            or any(name == p or name.startswith(p) for p in SPAN_ATTRIBUTE_PREFIXES)
            or name.split(" ")[0] in {s.split(" ")[0] for s in SPANS})


def test_every_attribute_the_code_writes_is_in_the_span_catalog():
    missing = {name: sorted(paths) for name, paths in literals().items() if not known(name)}
    assert missing == {}, "add these to telemetry/span_catalog.py"


def test_every_catalog_attribute_is_written_by_some_code():
    written = set(literals())
    unused = sorted(name for name in SPAN_ATTRIBUTES if name not in written)
    assert unused == []


def test_the_catch_catches_an_attribute_missing_from_the_catalog():
    """A test of the test: a new literal of the shape is not known until catalogued."""
    assert not known("memhealth.brand_new.attribute") and known("memhealth.hook")


def test_otel_convention_names_are_the_conventions_own():
    from opentelemetry.semconv import attributes as stable
    from opentelemetry.semconv._incubating import attributes as incubating

    defined = set()
    for package in (stable, incubating):
        directory = list(package.__path__)[0]
        for name in os.listdir(directory):
            if name.endswith("_attributes.py"):
                text = open(os.path.join(directory, name), encoding="utf-8").read()
                defined |= set(re.findall(r'^[A-Z_]+: Final = "([a-z0-9_.]+)"', text, re.M))
    ours = [name for name in SPAN_ATTRIBUTES if not name.startswith("memhealth.")]
    assert ours and sorted(n for n in ours if n not in defined) == []


def test_content_attributes_are_only_the_opt_in_prompt_text():
    assert [a.name for a in SPAN_ATTRIBUTES.values() if a.content] == ["memhealth.prompt.text"]
