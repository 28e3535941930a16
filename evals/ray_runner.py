"""`audit eval --ray [ADDRESS]`: the same runner, with batches of audits as Ray tasks.

The driver (the `audit eval` process) keeps everything an eval owns: the eval
directory, audits.jsonl, the progress bar and results.json. Each Ray task runs one
batch of cases with `evals.runner.play_cases`, exactly as a local eval runs them,
and returns their rows; the driver records a batch's rows when it comes back.

- **The store is shared through its URL.** Workers open the same database and keep
  their checkpoints where a local eval would (`scaffold.checkpoints`). A cluster at an
  ADDRESS needs PostgreSQL; SQLite serves only a local cluster (`--ray` alone), whose
  workers share this machine's disk.
- **A killed worker's audits are re-run, never duplicated.** Ray retries a task whose
  worker died (`TASK_RETRIES`). Run ids are fixed by the eval and the case, so the
  retry reads back the audits its first attempt finished, continues the one that was
  cut off from its last checkpoint, and starts the rest; nothing reached audits.jsonl
  from the dead attempt. A batch whose retries are spent becomes failed rows, which
  `--resume` continues.
- **Provider limits hold across workers** through one Ray actor (`SlotBroker`): every
  request attempt to an API provider takes a slot from it, so the sum over workers is
  at most the model spec's `max_concurrency`. An actor rather than rows in the
  database, because a slot is taken and returned around every request: a round trip to
  an in-memory actor costs about a millisecond, a locking transaction several, and a
  SQLite store has no cross-machine lock at all. A slot is a lease of the attempt's
  deadline (`timeout_s`) plus a margin, so slots held by a killed worker come back on
  their own. Our providers have no requests-per-minute limit to share; retries and
  backoff stay per worker, as they are per process.
- `--concurrency` is per worker on Ray: audits in flight in each task.
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from evals.audit_rows import failed_row
from evals.prices import PriceTable
from evals.results import AuditRow
from evals.runner import CaseSettings, play_cases
from evals.suites import EvalCase
from scaffold.providers.limits import provider_key, provider_slots
from scaffold.secrets import SecretRegistry
from scaffold.specs import ModelSpec, SpecError
from scaffold.store import Store
from targets.quirks import quirk_dirs, use_quirk_dirs

INSTALL = "pip install 'auditrl[ray]'"
TASK_RETRIES = 3  # a batch whose worker dies is run again this many times
LEASE_MARGIN_S = 5.0  # beyond an attempt's deadline, before a dead holder's slot is taken back
MAX_BATCH = 32


@dataclass(frozen=True)
class RayOptions:
    """Where and how to run an eval's audits on Ray."""

    address: str | None = None  # a running cluster ("auto", "ray://host:10001"); None starts a local one
    workers: int | None = None  # a local cluster's CPUs, one task each (default: this machine's)
    batch: int | None = None  # cases per task (default: `batches`)


class SlotBroker:
    """A Ray actor holding every provider's request slots for one eval (see the module docstring)."""

    def __init__(self) -> None:
        self.leases: dict[str, dict[str, float]] = {}  # provider key -> lease token -> expiry (monotonic)
        self.peak: dict[str, int] = {}

    async def acquire(self, key: str, limit: int, lease_s: float) -> str:
        while True:
            now = time.monotonic()
            held = self.leases.setdefault(key, {})
            for token, expiry in list(held.items()):
                if expiry < now:  # its holder died mid-request
                    del held[token]
            if len(held) < limit:
                token = uuid.uuid4().hex
                held[token] = now + lease_s
                self.peak[key] = max(self.peak.get(key, 0), len(held))
                return token
            await asyncio.sleep(0.005)

    async def release(self, key: str, token: str) -> None:
        self.leases.get(key, {}).pop(token, None)

    async def peaks(self) -> dict[str, int]:
        """The most slots each provider had taken at once."""
        return dict(self.peak)


class ClusterSlot:
    """One provider's slots at the broker, used as the provider's semaphore (`async with`)."""

    def __init__(self, broker: Any, spec: ModelSpec) -> None:
        self.broker, self.key, self.limit = broker, provider_key(spec), spec.max_concurrency
        self.lease_s = spec.timeout_s + LEASE_MARGIN_S
        self.tokens: list[str] = []

    async def __aenter__(self) -> None:
        self.tokens.append(await self.broker.acquire.remote(self.key, self.limit, self.lease_s))

    async def __aexit__(self, *exc: object) -> None:
        # Any of this provider's tokens will do: a slot is a count, not an identity.
        await self.broker.release.remote(self.key, self.tokens.pop())


def run_batch(
    settings: CaseSettings, cases: list[EvalCase], store_url: str, quirk_paths: list[str], prices: PriceTable,
    broker: Any,
) -> tuple[list[str], float]:
    """A Ray task: play `cases` as a local eval would; (each row as JSON, CPU seconds used)."""
    began = time.process_time()
    use_quirk_dirs(quirk_paths)
    rows: list[AuditRow] = []
    store = Store(store_url)
    # API keys come from this worker's own environment, as they would in a local eval.
    with provider_slots(lambda spec: ClusterSlot(broker, spec)):
        asyncio.run(play_cases(cases, settings, store, SecretRegistry(), prices, rows.append))
    store.engine.dispose()
    return [r.model_dump_json() for r in rows], time.process_time() - began


def worker_store_url(store: Store, options: RayOptions) -> str:
    """The URL workers open the store by: SQLite as an absolute path, and only on a local cluster."""
    path = store.sqlite_path()
    if path is None:
        return store.engine.url.render_as_string(hide_password=False)
    if options.address is not None:
        raise SpecError(
            f"--ray {options.address}: workers on a cluster share the store through its URL, and {store.url} is a "
            "file on this machine; use --store postgresql://... (SQLite serves only a local cluster: --ray local)"
        )
    return f"sqlite:///{path.resolve()}"


def batches(cases: list[EvalCase], workers: int, concurrency: int, size: int | None) -> list[list[EvalCase]]:
    """`cases` cut into tasks of `size`. By default about four tasks per worker, so that a
    killed worker costs little and the progress moves, but never fewer cases than a
    worker's `concurrency` while there are enough to go round (a task of one case would
    leave the others' slots idle), and at most MAX_BATCH."""
    if not cases:
        return []
    if size is None:
        spread = math.ceil(len(cases) / (4 * workers))
        size = min(MAX_BATCH, max(spread, min(concurrency, math.ceil(len(cases) / workers))))
    return [cases[i : i + size] for i in range(0, len(cases), size)]


def _start(options: RayOptions) -> tuple[Any, bool]:
    try:
        import ray
    except ImportError:
        raise SpecError(f"--ray needs Ray; run: {INSTALL}") from None
    if ray.is_initialized():
        return ray, False
    settings: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if options.address is None:
        settings["num_cpus"] = options.workers
    try:
        ray.init(address=options.address, **settings)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise SpecError(f"--ray {options.address or '(local)'}: cannot start or reach a Ray cluster: {exc}") from None
    return ray, True


async def play_on_ray(
    cases: list[EvalCase],
    settings: CaseSettings,
    store: Store,
    prices: PriceTable,
    options: RayOptions,
    on_done: Callable[[AuditRow], None],
) -> float:
    """Play `cases` as Ray tasks, handing each row to `on_done` as its batch returns; the workers' CPU seconds."""
    url = worker_store_url(store, options)
    if not cases:
        return 0.0
    ray, started_here = _start(options)
    try:
        broker = ray.remote(num_cpus=0)(SlotBroker).remote()
        task = ray.remote(num_cpus=1, max_retries=TASK_RETRIES, retry_exceptions=False)(run_batch)
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        quirk_paths = [str(p) for p in quirk_dirs()]
        pending = {}
        for batch in batches(cases, workers, settings.concurrency, options.batch):
            ref = task.remote(settings, batch, url, quirk_paths, prices, broker)
            pending[asyncio.wrap_future(ref.future())] = batch
        cpu_s = 0.0
        while pending:
            done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                batch = pending.pop(future)
                try:
                    rows, used = future.result()
                except Exception as exc:  # noqa: BLE001 - retries spent: its audits are failed rows
                    reason = f"Ray task failed after {TASK_RETRIES} retries: {type(exc).__name__}"
                    for case in batch:
                        on_done(failed_row(case, f"{settings.eval_id}-{case.case_id}", reason, 0.0))
                    continue
                cpu_s += used
                for row in rows:
                    on_done(AuditRow.model_validate_json(row))
        return cpu_s
    finally:
        if started_here:
            ray.shutdown()
