"""What every API provider shares: a concurrency limit, retries with backoff, usage.

A provider turns each SDK exception into a `CallFailure` (what went wrong, whether
trying again can help, what the server asked us to wait) and hands one attempt to
`ProviderRuntime.call`. The runtime owns everything else: how many requests are in
flight, how long to back off, when to give up, and the one-line `ModelError` that
people read when it does. The SDKs' own retries are switched off (max_retries=0) so
there is exactly one retry policy, with one set of knobs (the ModelSpec fields).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import random
import time
from contextvars import ContextVar
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Awaitable, Callable, Generic, Iterator, Mapping, TypeVar

from scaffold.messages import Usage
from scaffold.model import ModelError
from scaffold.specs import ModelSpec

T = TypeVar("T")
SleepFunction = Callable[[float], Awaitable[None]]
Redactor = Callable[[str], str]

# 529 is Anthropic's "overloaded"; the others are the usual transient gateway errors.
RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
STATUS_NAMES = {
    400: "bad request",
    401: "authentication failed",
    403: "permission denied",
    404: "not found",
    408: "request timeout",
    409: "conflict",
    413: "request too large",
    422: "unprocessable request",
    429: "rate limited",
    500: "internal server error",
    502: "bad gateway",
    503: "service unavailable",
    504: "gateway timeout",
    529: "overloaded",
}
# The SDKs' own timeout applies to each socket read, not to the request, so it is only a
# backstop behind our per-attempt deadline (`ProviderRuntime.call`); the margin makes the
# deadline the one that fires, so `timeout_s` means one thing: the whole attempt.
SDK_TIMEOUT_MARGIN_S = 5.0
_DETAIL_CHARS = 200  # enough for a server's one-line reason; bodies can be pages of HTML


class CallFailure(Exception):
    """One attempt failed. Raised by a provider's attempt function, consumed by the runtime.

    `kind` is a short human phrase ("HTTP 529 overloaded", "timeout", "malformed
    response"); `detail` is optional server-provided text (redacted before use).
    """

    def __init__(
        self,
        kind: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after_s: float | None = None,
        detail: str = "",
    ) -> None:
        super().__init__(kind)
        self.kind = kind
        self.retryable = retryable
        self.status = status
        self.retry_after_s = retry_after_s
        self.detail = detail


def status_failure(status: int, headers: Mapping[str, str] | None = None, detail: str = "") -> CallFailure:
    """The CallFailure for an HTTP error status, with the server's retry-after if any."""
    name = STATUS_NAMES.get(status, "server error" if status >= 500 else "client error")
    retryable = status in RETRYABLE_STATUSES or status >= 500
    return CallFailure(
        f"HTTP {status} {name}",
        retryable=retryable,
        status=status,
        retry_after_s=parse_retry_after(headers) if retryable else None,
        detail=detail,
    )


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms`, or `retry-after` (seconds or HTTP date)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass
class ProviderUsage:
    """Running totals for one provider instance (all audits that share it)."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0  # HTTP attempts made, successful or not
    # Attempts abandoned at their deadline (their prompts are in input_tokens when a retry succeeded).
    timed_out: int = 0
    retries: int = 0  # attempts that were repeats of a failed one
    failures: int = 0  # calls that ended in a ModelError

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class CallOutcome(Generic[T]):
    """What a successful call returned, and how many of its attempts were abandoned at the deadline."""

    value: T
    timed_out: int = 0


# How a provider bounds its requests in flight: by default a semaphore of its own
# (`max_concurrency` per process). An eval spread over processes (`evals.ray_runner`)
# installs a factory whose slots are shared by every worker, so the limit holds across them.
SlotFactory = Callable[[ModelSpec], Any]  # returns an async context manager, entered per attempt
_SLOT_FACTORY: ContextVar[SlotFactory | None] = ContextVar("auditrl_provider_slots", default=None)


@contextlib.contextmanager
def provider_slots(factory: SlotFactory) -> Iterator[None]:
    """Providers built inside this block (in this context) take their request slots from `factory`."""
    token = _SLOT_FACTORY.set(factory)
    try:
        yield
    finally:
        _SLOT_FACTORY.reset(token)


def provider_key(spec: ModelSpec) -> str:
    """What one concurrency limit covers: one provider, model and endpoint."""
    return f"{spec.label()}@{spec.base_url or ''}"


def slots_installed() -> bool:
    """Whether a `provider_slots` factory is in force here."""
    return _SLOT_FACTORY.get() is not None


class ProcessSlots:
    """One semaphore per provider key for every model built in its block: several targets on one
    endpoint (system-prompt organisms of one served model) share its `max_concurrency`."""

    def __init__(self) -> None:
        self.by_key: dict[str, asyncio.Semaphore] = {}

    def __call__(self, spec: ModelSpec) -> asyncio.Semaphore:
        return self.by_key.setdefault(provider_key(spec), asyncio.Semaphore(spec.max_concurrency))


class ProviderRuntime:
    """The concurrency limit, retry loop and usage totals of one provider instance.

    `sleep` and `rng` are injectable so tests can observe backoff without waiting.
    `redact` scrubs secrets from any server text that reaches an error message.
    """

    def __init__(
        self,
        spec: ModelSpec,
        *,
        redact: Redactor | None = None,
        sleep: SleepFunction = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.spec = spec
        self.label = spec.label()
        factory = _SLOT_FACTORY.get()
        self.semaphore = factory(spec) if factory is not None else asyncio.Semaphore(spec.max_concurrency)
        self.usage = ProviderUsage()
        self.redact: Redactor = redact or (lambda text: text)
        self.sleep = sleep
        self.rng = rng or random.Random()
        self.in_flight = 0
        self.max_in_flight = 0

    def backoff_s(self, retry: int, retry_after_s: float | None = None) -> float:
        """Delay before retry number `retry` (0-based): full jitter, or the server's wish.

        Full jitter (uniform between 0 and the exponential cap) spreads out clients
        that failed together, so they do not come back together. A server's
        retry-after wins, but never beyond retry_max_delay_s: a misconfigured proxy
        asking for an hour must not stall an eval.
        """
        cap = self.spec.retry_max_delay_s
        if retry_after_s is not None:
            return min(retry_after_s, cap)
        ceiling = min(cap, self.spec.retry_base_delay_s * (2**retry))
        return self.rng.uniform(0.0, ceiling)

    async def call(self, attempt: Callable[[], Awaitable[T]]) -> CallOutcome[T]:
        """Run `attempt` under the concurrency limit, retrying retryable CallFailures.

        Each attempt has a deadline of the spec's `timeout_s` for the whole request: the
        SDKs' own timeout is per socket read, so a server that drips a byte a second
        would otherwise hold an audit forever. A missed deadline is a retryable timeout,
        counted in the outcome so that `settle` can charge its prompt.
        Raises ModelError when a failure is not retryable, or retries are spent.
        """
        attempts = 0
        timed_out = 0
        while True:
            attempts += 1
            # The semaphore is held per attempt, not across backoff sleeps: it bounds
            # what the server sees in flight, and a sleeping retry should not block
            # a healthy request from using the slot.
            async with self.semaphore:
                self._enter()
                try:
                    return CallOutcome(await asyncio.wait_for(attempt(), timeout=self.spec.timeout_s), timed_out)
                except CallFailure as failure:
                    error = failure
                except asyncio.TimeoutError:
                    error = CallFailure("timeout", retryable=True)  # as the SDK's own timeout reads
                finally:
                    self._leave()
            if error.kind == "timeout":
                timed_out += 1
                self.usage.timed_out += 1
            if not error.retryable or attempts > self.spec.max_retries:
                self.usage.failures += 1
                # `from None`: the SDK exception's text can quote a server body that
                # echoes the key, and tracebacks bypass the log redaction filter.
                raise self._model_error(error, attempts) from None
            self.usage.retries += 1
            await self.sleep(self.backoff_s(attempts - 1, error.retry_after_s))

    def settle(self, usage: Usage, timed_out: int = 0) -> Usage:
        """The usage to charge a successful call, added to the totals.

        Each attempt abandoned at its deadline sent the same prompt as the one that
        succeeded, and providers bill a prompt whether or not the reply is read, so its
        input tokens are charged again. Its output never came back, so is not counted.
        """
        charged = usage.model_copy(
            update={
                "input_tokens": usage.input_tokens * (1 + timed_out),
                "timed_out_requests": usage.timed_out_requests + timed_out,
            }
        )
        self.usage.input_tokens += charged.input_tokens
        self.usage.output_tokens += charged.output_tokens
        return charged

    def _enter(self) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        self.in_flight -= 1
        self.usage.requests += 1

    def _model_error(self, failure: CallFailure, attempts: int) -> ModelError:
        if failure.retryable:
            tail = f"after {attempts} attempt{'s' if attempts != 1 else ''}"
        else:
            tail = "(not retried)"
        detail = " ".join(self.redact(failure.detail).split())[:_DETAIL_CHARS]
        text = f"{self.label}: {failure.kind} {tail}" + (f": {detail}" if detail else "")
        return ModelError(text, retryable=failure.retryable, status=failure.status)


def sdk_timeout_s(spec: ModelSpec) -> float:
    """The timeout to give an SDK client: a backstop just behind the spec's per-attempt deadline."""
    return spec.timeout_s + SDK_TIMEOUT_MARGIN_S


def failure_from_sdk_error(exc: BaseException, sdk: ModuleType) -> CallFailure | None:
    """Classify an exception raised by an SDK call (`sdk` is the `anthropic` or `openai` module).

    Both SDKs share one exception hierarchy (APIStatusError, APITimeoutError,
    APIConnectionError, APIResponseValidationError), so one classifier serves both.
    Returns None for exceptions that are not about the call (bugs must surface).
    """
    if isinstance(exc, sdk.APITimeoutError):  # a subclass of APIConnectionError: test it first
        return CallFailure("timeout", retryable=True)
    if isinstance(exc, sdk.APIConnectionError):
        return CallFailure("connection error", retryable=True)
    if isinstance(exc, sdk.APIResponseValidationError):
        return CallFailure("malformed response", retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        return status_failure(exc.status_code, exc.response.headers, detail=_server_message(exc.body))
    if isinstance(exc, json.JSONDecodeError):
        # The SDKs let a JSON decode error of a body that claims to be JSON escape as is.
        return CallFailure("malformed response", retryable=True, detail="the body is not valid JSON")
    return None


async def sdk_call(call: Callable[[], Awaitable[T]], sdk: ModuleType) -> T:
    """Await one SDK call, turning the SDK's errors into CallFailures (others propagate)."""
    try:
        return await call()
    except Exception as exc:
        failure = failure_from_sdk_error(exc, sdk)
        if failure is None:
            raise
        raise failure from exc


def _server_message(body: object) -> str:
    """The human reason in an error body: `error.message` in both APIs' error shapes."""
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else error
        return message if isinstance(message, str) else ""
    if isinstance(body, str) and not body.lstrip().startswith("<"):  # a proxy's HTML page says nothing useful
        return body
    return ""
