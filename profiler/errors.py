"""The project's own error types. Pages and the CLI catch only these and show their message.

Every message is a full sentence that names the file (or store) and the problem, so it can be shown
to a user as is, without a traceback.
"""
from __future__ import annotations


class ProfilerError(Exception):
    """Base class of every error this project raises on purpose."""


class TraceError(ProfilerError):
    """A trace file cannot be ingested. `name` is the file, `problem` the reason."""

    def __init__(self, name: str, problem: str):
        self.name = name
        self.problem = problem
        super().__init__(f"{name}: {problem}")

    def __reduce__(self):  # a worker process returns it to the job: it must unpickle with both fields
        return type(self), (self.name, self.problem)


class EmptyTraceError(TraceError):
    pass


class NotJsonError(TraceError):
    pass


class TruncatedTraceError(TraceError):
    pass


class CorruptGzipError(TraceError):
    pass


class NotATraceError(TraceError):
    pass


class TraceTooLargeError(TraceError):
    pass


class StoreError(ProfilerError):
    """The store cannot be opened, read or written."""


class StoreLockedError(StoreError):
    """Another process kept the store file locked longer than we were willing to wait."""


class NotAStoreError(StoreError):
    """The file given as the store is something else (a SQLite database, text, a folder)."""


class StoreOutdatedError(StoreError):
    """A store opened read-only has an older schema (a read-write open would migrate it)."""


class UnknownRunError(StoreError):
    """A run id that is not in the store."""


class NestingTooDeepError(TraceError):
    pass
