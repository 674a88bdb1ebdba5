"""Config: TOML plus MEMHEALTH_<SECTION>_<KEY> overrides, strictly validated."""

from __future__ import annotations

import pytest

from memhealth.config import SCHEMA, load, render_default
from memhealth.errors import ConfigError


def write_config(tmp_path, text):
    (tmp_path / "config.toml").write_text(text)
    return str(tmp_path)


def test_defaults_are_bm25_only_with_the_documented_embedding_settings(tmp_path):
    cfg = load(str(tmp_path), environ={})
    assert cfg["embedding"]["url"] == ""
    assert not cfg.embedding_enabled
    assert cfg["embedding"]["keep_alive"] == "4h" and cfg["embedding"]["num_ctx"] == 8192


def test_the_file_then_the_environment_override_defaults(tmp_path):
    state = write_config(tmp_path, '[embedding]\nurl = "http://127.0.0.1:11434"\ndim = 384\n')
    cfg = load(state, environ={"MEMHEALTH_EMBEDDING_DIM": "1024", "MEMHEALTH_INJECTION_MODE": "off",
                               "MEMHEALTH_GATE_MODE": "off", "MEMHEALTH_INGEST_DOCS": "a.md, docs"})
    assert cfg["embedding"]["url"] == "http://127.0.0.1:11434"
    assert cfg["embedding"]["dim"] == 1024
    assert cfg["injection"]["mode"] == "off" and cfg["gate"]["mode"] == "off"
    assert cfg["ingest"]["docs"] == ["a.md", "docs"]


@pytest.mark.parametrize("text, fragment", [
    ("[embedding]\ndim = \"wide\"\n", "[embedding].dim"),
    ("[embedding]\ndim = 0\n", "[embedding].dim"),
    ("[embedding]\nurl = \"localhost:11434\"\n", "[embedding].url"),
    ("[embedding]\nmodle = \"x\"\n", "unknown key [embedding].modle"),
    ("[embeddings]\nurl = \"\"\n", "unknown section [embeddings]"),
    ("[injection]\nmode = \"sometimes\"\n", "[injection].mode"),
    ("[injection]\ncapture_content = \"yes\"\n", "[injection].capture_content"),
    ("not toml at all [[[", "not valid TOML"),
])
def test_a_bad_file_value_is_one_clear_error_naming_the_key(tmp_path, text, fragment):
    with pytest.raises(ConfigError) as info:
        load(write_config(tmp_path, text), environ={})
    message = str(info.value)
    assert fragment in message and "\n" not in message


@pytest.mark.parametrize("name, value", [
    ("MEMHEALTH_EMBEDDING_TIMEOUT_S", "fast"),
    ("MEMHEALTH_EMBEDDING_TIMEOUT_S", "nan"),
    ("MEMHEALTH_TELEMETRY_CAPTURE_CONTENT", "maybe"),
    ("MEMHEALTH_HOOKS_BUSY_TIMEOUT_S", "-1"),
    ("MEMHEALTH_EMBEDDING_NOPE", "1"),
])
def test_a_bad_environment_value_names_the_variable(tmp_path, name, value):
    with pytest.raises(ConfigError) as info:
        load(str(tmp_path), environ={name: value})
    assert name in str(info.value)


def test_unrelated_memhealth_variables_are_not_config(tmp_path):
    unrelated = {"MEMHEALTH_HOME": "/x", "MEMHEALTH_X": "1", "MEMHEALTH_CACHE_DIR": "/y"}
    assert load(str(tmp_path), environ=unrelated) == load(str(tmp_path), environ={})
    # beside a real one, only the real one counts
    cfg = load(str(tmp_path), environ={**unrelated, "MEMHEALTH_EMBEDDING_DIM": "384"})
    assert cfg["embedding"]["dim"] == 384
    assert {k: v for k, v in cfg.items() if k != "embedding"} == \
        {k: v for k, v in load(str(tmp_path), environ={}).items() if k != "embedding"}


def test_the_json_cache_follows_edits_to_the_file(tmp_path):
    state = write_config(tmp_path, "[embedding]\ndim = 384\n")
    assert load(state, environ={})["embedding"]["dim"] == 384
    (tmp_path / "config.toml").write_text("[embedding]\ndim = 1024  # edited, different size\n")
    assert load(state, environ={})["embedding"]["dim"] == 1024


def test_the_rendered_default_file_parses_and_documents_every_key(tmp_path):
    text = render_default()
    state = write_config(tmp_path, text)
    load(state, environ={})
    for section, keys in SCHEMA.items():
        assert f"[{section}]" in text
        for key in keys:
            assert f"# {key} = " in text


def test_a_hook_with_a_bad_config_still_records_its_heartbeat(project):
    from tests.conftest import payload, rows, run_hook

    (project / ".memhealth" / "config.toml").write_text("[embedding]\ndim = -5\n")
    run = run_hook("stop", payload("stop", project), cwd=str(project))
    assert run.returncode == 0
    assert rows(project, "SELECT outcome, reason FROM heartbeats") == [("error", "config")]


# -- where a bad file's error is, and the command that clears it ----------------------------------

@pytest.mark.parametrize("text, key, line", [
    ('# a comment\n[embedding]\nurl = ""\ndim = "wide"\n', "[embedding].dim", 4),
    ('[gate]\nmode = "on"\n\n[injection]\n  "mode" = "sometimes"\n', "[injection].mode", 5),
    ('[embedding]\nmodle = "x"\n', "[embedding].modle", 2),
    ('[embedding]\nurl = ""\n[embeddings]\nurl = ""\ndim = 3\n[gate]\nmode = "on"\n', "[embeddings]", 3),
    ('[embedding]\nurl = "x\n', None, 2),  # not TOML: tomllib names the line
])
def test_a_bad_file_names_its_line_and_the_command_that_comments_it_out(tmp_path, text, key, line):
    import subprocess

    state = write_config(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load(state, environ={})
    exc = info.value
    assert (exc.key, exc.line) == (key, line)
    assert exc.command.startswith(f"sed -i '{line}") and exc.command.endswith(str(tmp_path / "config.toml"))
    assert f"`{exc.command}`" in exc.fix
    done = subprocess.run(["bash", "-c", exc.command], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    load(state, environ={})  # followed as printed: the file loads, the default in the line's place


def test_the_cli_prints_a_config_errors_fix_on_its_one_line(tmp_path):
    from tests.conftest import run_cli

    root = tmp_path / "p"
    root.mkdir()
    assert run_cli("init", "--project", str(root), "--no-templates").returncode == 0
    config = root / ".memhealth" / "config.toml"
    text = config.read_text()
    assert text.count("\n# busy_timeout_s = ") == 1
    config.write_text(text.replace("\n# busy_timeout_s = ", '\nbusy_timeout_s = "soon" # was '))
    out = run_cli("gate", "--project", str(root))
    line = out.stderr.strip()
    assert out.returncode == 2 and len(line.splitlines()) == 1, out.stderr
    assert "[hooks].busy_timeout_s" in line and "FIX: comment out line" in line and "sed -i '" in line, line
