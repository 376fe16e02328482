"""The project's own error types, all of them, each deriving from `ProfilerError`. Pages and the
CLI catch only these and show their message.

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


class QueryError(StoreError):
    """A query asked for something the store cannot answer; the message says what and why."""


class RunNameError(StoreError):
    """A new run name that cannot be used; the message says why."""


class NothingMatchedError(StoreError):
    """A counters report none of whose kernels is a launch of the run: it is refused, the store
    unchanged."""


class JobError(ProfilerError):
    """A job cannot be ingested or read; the message says which job (and file) and why."""


class Damage(ProfilerError):
    """Why a job cannot be read: the file at fault (inside the job directory) and the reason."""

    def __init__(self, file: str, reason: str):
        super().__init__(f"{file} {reason}")
        self.file, self.reason = file, reason

    def __reduce__(self):
        return type(self), (self.file, self.reason)


class CaptureError(ProfilerError):
    """The capture was asked for something it cannot do; the message says what."""


class VariantError(ProfilerError):
    """A variant could not be prepared or run here; the message says why, in one sentence."""


class CountersFileError(TraceError):
    """An Nsight Compute export that cannot be read; the message names the file and the problem."""


class ShareError(ProfilerError, ValueError):
    """A URL or view state that cannot describe a view; the message says which part and why."""


class TooDeepError(ProfilerError, ValueError):
    """Brackets nest deeper than the JSON scanner's limit (the trace reader names the file)."""


class OtherDeviceError(StoreError):
    """A counters report measured on another GPU than the run's: refused, the store unchanged."""
