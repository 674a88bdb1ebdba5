"""Find the project a hook or command belongs to: the nearest directory at or above a start
directory that holds `.memhealth/`."""

from __future__ import annotations

import os

from memhealth.errors import ProjectNotFound
from memory_core.store.layout import DB_NAME, SPILL_NAME, STATE_DIR


class Project:
    """A project root and its state paths: `Project.find(cwd).db_path`."""

    __slots__ = ("root", "state_dir")

    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self.state_dir = os.path.join(self.root, STATE_DIR)

    @property
    def db_path(self) -> str:
        return os.path.join(self.state_dir, DB_NAME)

    @property
    def spill_path(self) -> str:
        """Rows a hook could not write to the database wait here (see memory_core.outbox.spill)."""
        return os.path.join(self.state_dir, SPILL_NAME)

    @classmethod
    def find(cls, start: str | None) -> Project:
        """Nearest ancestor (inclusive) of `start` holding `.memhealth/`; ProjectNotFound else."""
        here = origin = os.path.abspath(start or os.getcwd())
        while True:
            if os.path.isdir(os.path.join(here, STATE_DIR)):
                return cls(here)
            parent = os.path.dirname(here)
            if parent == here:
                raise ProjectNotFound(
                    f"no {STATE_DIR}/ at or above {origin}; run `memhealth init` there")
            here = parent

    def __repr__(self) -> str:
        return f"Project({self.root!r})"
