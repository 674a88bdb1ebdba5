"""Git history ingest against real repositories made with the git binary."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from memhealth.config import defaults
from memory_core.ingest import run_ingest
from memory_core.store.db import connect

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

ENV = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org",
       "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.org",
       "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}


def git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, timeout=30,
                   env=dict(os.environ, **ENV))


def commit(root, name, text, message):
    (root / name).write_text(text, encoding="utf-8")
    git(root, "add", name)
    git(root, "commit", "-q", "-m", message)


def config(**ingest):
    cfg = defaults()
    cfg["ingest"].update(docs=[], memory=[], ledgers=[], transcripts=[], git=True)
    cfg["ingest"].update(ingest)
    return cfg


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "a.py", "print(1)\n", "Add the checkpoint guard\n\nWAL readers stalled the writer.")
    commit(root, "b.py", "print(2)\n", "Split the ingest budget per source")
    return root


def commits(conn):
    return conn.execute("SELECT title, content, kind, signal_weight FROM chunks WHERE source = 'git' "
                        "ORDER BY id").fetchall()


def test_commits_become_chunks_with_message_and_touched_paths(repo):
    conn = connect(str(repo / "memory.db"))
    report = run_ingest(conn, str(repo), config())
    assert report.sources["git"].chunks_added == 2
    got = {title: (content, kind, weight) for title, content, kind, weight in commits(conn)}
    content, kind, weight = got["Add the checkpoint guard"]
    assert "WAL readers stalled the writer." in content and content.endswith("Files:\na.py")
    assert (kind, weight) == ("commit", 15.0)


def test_a_second_run_reads_nothing_and_a_new_commit_adds_exactly_one(repo):
    conn = connect(str(repo / "memory.db"))
    run_ingest(conn, str(repo), config())
    assert run_ingest(conn, str(repo), config()).chunks_added == 0
    commit(repo, "c.py", "print(3)\n", "Third change")
    report = run_ingest(conn, str(repo), config())
    assert report.chunks_added == 1
    assert commits(conn)[-1][0] == "Third change"


def test_rewritten_history_is_read_again_without_duplicates(repo):
    conn = connect(str(repo / "memory.db"))
    run_ingest(conn, str(repo), config())
    git(repo, "commit", "-q", "--amend", "-m", "Split the ingest budget per source, amended")
    report = run_ingest(conn, str(repo), config())
    assert report.chunks_added == 1
    assert len(commits(conn)) == 3  # the amended-away commit stays: it was once true


def test_the_commit_window_is_bounded_by_git_max_commits(repo):
    conn = connect(str(repo / "memory.db"))
    report = run_ingest(conn, str(repo), config(git_max_commits=1))
    assert report.chunks_added == 1
    assert commits(conn)[0][0] == "Split the ingest budget per source"


def test_a_directory_that_is_not_a_repository_is_a_note_not_an_error(tmp_path):
    conn = connect(str(tmp_path / "memory.db"))
    report = run_ingest(conn, str(tmp_path), config())
    assert report.errors == 0
    assert "not a git repository" in report.sources["git"].notes[0]


def test_missing_git_binary_is_a_note_not_an_error(repo, monkeypatch):
    monkeypatch.setenv("PATH", str(repo / "no-bin-here"))
    conn = connect(str(repo / "memory.db"))
    report = run_ingest(conn, str(repo), config())
    assert report.errors == 0
    assert report.sources["git"].notes == ["git is not installed; history not ingested"]
