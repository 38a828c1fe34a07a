"""The one error every reader raises for a file it cannot accept."""

from __future__ import annotations

from pathlib import Path


class MalformedFileError(ValueError):
    """A landing file that does not match its format; names the file and the problem."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")

    def __reduce__(self) -> tuple[type[MalformedFileError], tuple[str, str]]:
        # raised in a parsing worker process, it comes back pickled: with both arguments
        return type(self), (self.path, self.problem)
