"""The `hf` provider's batched decode loop: one forward pass per choice, not per token.

Under constrained decoding most of a reply is the grammar's: in a SmolLM2 GRPO step (G = 8,
8 turns, the compact manual) 86% of the sampled ids were forced (`<tool_call>{"name": "`,
keys, brackets, the end of turn). Stepping through them one pass each made decoding most of
a rollout's cost. Here a row's forced run is appended as soon as the grammar knows it and is
read with the row's next pass, as one chunk of several tokens (jump-forward decoding, as
SGLang does for JSON). A pass is paid per token the model chooses.

Exactness. The logprob recorded for a token is log_softmax(logits / T) at the position before
it, read from the chunk's logits (`logits_to_keep` covers the longest chunk tail), so the
records are those of a token-by-token decode and of a trainer's forward pass. Rows are
left-padded per pass; padding anywhere in the cache is masked keys, and positions count
real tokens only. A row's generator is drawn from only when that row samples, so a seeded
request samples the same whatever shares its batch.

The last id of a finished row is never read (nothing follows it), so a row's cache holds
its prompt and all but its last id: `Row.columns` says where, and with `keep_kv` the row's
KV is copied out (`Row.kv`, batch 1) for the turn cache.

Rows leave. A row that has finished rode along in every later pass (padding through every
layer) and every pass pads the rows whose chunk is shorter than the longest, so the cache
grows faster than any row's tokens: 16 constrained SmolLM2 replies ran 531 passes with a
row active in 47% of them. When re-laying would leave fewer than `COMPACT_BELOW` of the
cache's cells (the rows still decoding, each as long as the longest of them), the finished
rows are dropped from the batch (their KV copied out first) and the rest are re-laid with
their padding squeezed out (`growing_cache.gather_rows`): one copy of the cache, the old one
is freed, and every later pass reads and computes only what is live. Positions count real
tokens, so a re-laid row decodes as it would have, up to the order of floating-point sums.

Each pass still pads every row to the widest chunk (60% of what a GRPO step's passes computed
in the p4 run). Reading long forced runs over several passes cut that to 26% in
benchmarks/decode_relay.py but saved no time (stop 56: 157.8 s against 158.6 s), so it is not done.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Sequence

import torch

from scaffold.providers.batcher import GenerationAbandoned, left_pad
from scaffold.providers.constrained import GrammarState, ToolCallGrammar
from scaffold.providers.growing_cache import gather_rows, is_growing
from scaffold.providers.turn_cache import Layers, row_layers

# Re-lay the batch when that leaves fewer than this share of its cache cells. One re-lay
# copies the live cache once, about what one pass reads; every later pass then saves at
# least a quarter.
COMPACT_BELOW = 0.75


@dataclass(frozen=True)
class DecodeRequest:
    """One prompt to continue."""

    prompt_ids: list[int]
    max_new_tokens: int
    temperature: float  # 0: greedy
    seed: int | None
    grammar: ToolCallGrammar | None = None


@dataclass(frozen=True)
class Completion:
    """What one request sampled, with the model's own logprob of each id."""

    ids: list[int]
    logprobs: list[float]
    stopped: bool  # an end-of-turn token was sampled
    policy_version: str | None
    mask: list[int] | None = None  # 0 where the grammar forced the token


@dataclass
class Row:
    """One request's progress through the loop."""

    request: DecodeRequest
    grammar: GrammarState | None
    generator: torch.Generator | None
    chunk: list[int]  # ids the next pass reads
    columns: list[int]  # cache columns holding this row's real tokens
    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    unscored: int = 0  # trailing ids whose logprob the next pass gives
    finished: bool = False
    stopped: bool = False
    kv: Layers | None = None  # with keep_kv: the KV at `columns`, copied out when the row leaves

    def take(self, token: int, logprob: float | None, forced: bool, stop_ids: frozenset[int]) -> None:
        """Append `token` (its logprob, or None when the next pass gives it) and move on."""
        self.ids.append(token)
        self.logprobs.append(0.0 if logprob is None else logprob)
        self.unscored = self.unscored + 1 if logprob is None else 0
        self.mask.append(0 if forced else 1)
        self.chunk.append(token)
        if self.grammar is not None:
            self.grammar.advance(token)
        self.stopped = token in stop_ids
        self.finished = self.stopped or len(self.ids) >= self.request.max_new_tokens
        if self.finished:
            self.chunk.pop()  # nothing follows the last id: it is never read

    def fast_forward(self, stop_ids: frozenset[int]) -> None:
        """Append every id the grammar forces from here on (their logprobs come with the next pass)."""
        while self.grammar is not None and not self.finished:
            allowed = self.grammar.allowed()
            if allowed is None or len(allowed) != 1:
                return
            self.take(allowed[0], None, True, stop_ids)

    def completion(self, version: str | None) -> Completion:
        return Completion(self.ids, self.logprobs, self.stopped, version, self.mask if self.grammar else None)


@dataclass
class DecodeCounts:
    """What decoding did and where its time went (one batch, or summed by `DecodeStats`)."""

    passes: int = 0
    relays: int = 0  # times the batch was re-laid (rows dropped, padding squeezed out)
    first_pass_s: float = 0.0  # the pass that reads the prompts' new tokens (prefill)
    later_passes_s: float = 0.0
    relay_s: float = 0.0
    row_passes: int = 0  # Σ over passes of the rows in the batch
    read_tokens: int = 0  # the ids the passes read
    padded_tokens: int = 0  # Σ over passes of rows x chunk width: what the passes computed

    def add(self, other: DecodeCounts) -> None:
        for item in fields(DecodeCounts):
            setattr(self, item.name, getattr(self, item.name) + getattr(other, item.name))


@dataclass
class DecodeResult:
    rows: list[Row]
    counts: DecodeCounts


@dataclass
class DecodeStats(DecodeCounts):
    """A sampler's `DecodeCounts` over its batches until `take`."""

    batches: int = 0

    def add(self, other: DecodeCounts) -> None:
        super().add(other)
        self.batches += 1

    def take(self) -> dict[str, float]:
        """The totals so far as metrics (empty when nothing was decoded), and a fresh start."""
        done = DecodeStats(**self.__dict__)
        self.__dict__.update(DecodeStats().__dict__)
        if not done.passes:
            return {}
        return {
            "batches": done.batches,
            "passes": done.passes,
            "relays": done.relays,
            "first_pass_s": done.first_pass_s,
            "later_passes_s": done.later_passes_s,
            "relay_s": done.relay_s,
            "rows_per_pass": done.row_passes / done.passes,
            # The share of what the passes computed that was padding (rows waiting on the longest chunk).
            "padding_share": 1 - done.read_tokens / done.padded_tokens if done.padded_tokens else 0.0,
        }


def decode_batch(
    model: Any,
    requests: Sequence[DecodeRequest],
    *,
    reused: Sequence[int],
    cache: Any,
    cached_mask: Sequence[Sequence[int]],
    cache_arg: str,
    pad_id: int,
    stop_ids: frozenset[int],
    record: bool,
    device: torch.device,
    new_generator: Any,
    abandoned: Callable[[], bool] = lambda: False,
    keep_kv: bool = False,
    compact_below: float | None = None,
) -> DecodeResult:
    """Decode `requests` together. Row i's first `reused[i]` prompt ids are already in
    `cache` (left-padded to one width, `cached_mask` 0 on the padding). With `keep_kv`, each
    row's KV ends up in `Row.kv`. `compact_below` (default `COMPACT_BELOW`; 0 never) is when
    the batch is re-laid; only a `growing_cache` is. Raises `GenerationAbandoned` before a
    pass when `abandoned()` (the batcher's callers are gone)."""
    threshold = COMPACT_BELOW if compact_below is None else compact_below
    width = len(cached_mask[0]) if cached_mask else 0
    temperature = requests[0].temperature  # the batcher groups by temperature
    rows = [
        Row(
            request=r,
            grammar=r.grammar.start(r.max_new_tokens) if r.grammar else None,
            generator=new_generator(r.seed) if temperature > 0 else None,
            chunk=list(r.prompt_ids[n:]),
            columns=list(range(width - n, width)),
        )
        for r, n in zip(requests, reused, strict=True)
    ]
    for row in rows:
        row.fast_forward(stop_ids)  # the reply's opening structure is read with the prompt
    batch = list(rows)  # the rows still in the cache, in its row order
    attention = torch.tensor(cached_mask, dtype=torch.long, device=device).reshape(len(rows), width)
    counts = DecodeCounts()
    while any(row.chunk for row in batch):
        if abandoned():
            raise GenerationAbandoned(f"decoding stopped after {counts.passes} passes: its callers are gone")
        if threshold > 0 and is_growing(cache) and _worth_relaying(batch, width, threshold):
            started = time.perf_counter()
            cache, width, attention, batch = _relay(cache, batch, keep_kv, device)
            counts.relays += 1
            counts.relay_s += _elapsed(started, device)
        chunks = [row.chunk for row in batch]
        ids, mask = left_pad(chunks, pad_id)
        span = len(ids[0])
        for row in batch:
            row.columns.extend(range(width + span - len(row.chunk), width + span))
        attention = torch.cat([attention, torch.tensor(mask, dtype=torch.long, device=device)], dim=1)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)[:, width:]
        # Logits for each row's unscored tail and (if it goes on) the position it samples from.
        keep = max(row.unscored + (0 if row.finished else 1) for row in batch if row.chunk)
        counts.row_passes += len(batch)
        counts.read_tokens += sum(len(chunk) for chunk in chunks)
        counts.padded_tokens += len(batch) * span
        started = time.perf_counter()
        out = model(
            input_ids=torch.tensor(ids, device=device),
            attention_mask=attention,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=keep,  # never (batch, chunk, vocab) for a whole prompt
            **({cache_arg: cache} if cache is not None else {}),
        )
        cache, logits = out[cache_arg], out.logits.float()
        del out  # nothing else of the pass's output may outlive it (a re-lay frees the old cache)
        width += span
        scaled = logits / temperature if temperature > 0 else logits
        lse = torch.logsumexp(scaled, dim=-1) if record else None  # (batch, keep)
        sampling = [i for i, row in enumerate(batch) if row.chunk and not row.finished]
        for i, row in enumerate(batch):
            if row.chunk and row.unscored and lse is not None:
                _score_tail(row, scaled[i], lse[i], keep)
            row.unscored = 0
            row.chunk = []
        if sampling:
            _sample(batch, sampling, scaled[:, -1, :], lse[:, -1] if lse is not None else None, temperature, stop_ids)
        seconds = _elapsed(started, device)  # the pass with its scoring and sampling
        if counts.passes:
            counts.later_passes_s += seconds
        else:
            counts.first_pass_s += seconds
        counts.passes += 1
    if keep_kv and cache is not None:
        for i, row in enumerate(batch):
            row.kv = row_layers(cache, i, torch.tensor(row.columns, device=device))
    return DecodeResult(rows, counts)


def _elapsed(started: float, device: torch.device) -> float:
    """Seconds since `started`, once the device has finished what was queued (CUDA runs ahead)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - started


def _worth_relaying(batch: list[Row], width: int, threshold: float) -> bool:
    """Whether a re-lay would leave fewer than `threshold` of the cache's cells: the rows still
    decoding, each as long as the longest of them."""
    staying = [len(row.columns) for row in batch if row.chunk]
    return bool(staying) and len(staying) * max(staying) < threshold * len(batch) * width


def _relay(cache: Any, batch: list[Row], keep_kv: bool, device: torch.device) -> tuple[Any, int, torch.Tensor, list[Row]]:
    """Drop the rows that are done (copying out their KV with `keep_kv`) and squeeze the
    padding out of the rest: (cache, width, attention mask, rows), the rows' columns moved."""
    staying = [(i, row) for i, row in enumerate(batch) if row.chunk]
    if keep_kv:
        for i, row in enumerate(batch):
            if not row.chunk:
                row.kv = row_layers(cache, i, torch.tensor(row.columns, device=device))
    old = cache
    cache, width = gather_rows(old, [(i, row.columns) for i, row in staying])
    old.layers.clear()  # the caller still holds the cache it passed in: free its buffers now
    for _, row in staying:
        row.columns = list(range(width - len(row.columns), width))
    attention = torch.tensor([[0] * (width - len(row.columns)) + [1] * len(row.columns) for _, row in staying],
                             dtype=torch.long, device=device)
    return cache, width, attention, [row for _, row in staying]


def _score_tail(row: Row, scaled: torch.Tensor, lse: torch.Tensor, keep: int) -> None:
    """The logprobs of the row's unscored ids, from the logits at the positions before them."""
    m = row.unscored
    # A row that goes on samples from the last position, so its tail's predictors end one before it.
    end = keep - (0 if row.finished else 1)
    positions = torch.arange(end - m, end)
    tokens = torch.tensor(row.ids[-m:])
    values = (scaled[positions, tokens] - lse[positions]).tolist()
    row.logprobs[-m:] = values


def _sample(
    rows: list[Row],
    sampling: list[int],
    scaled: torch.Tensor,
    lse: torch.Tensor | None,
    temperature: float,
    stop_ids: frozenset[int],
) -> None:
    """Sample (or argmax) the next id of each row in `sampling`, within its grammar, then fast-forward."""
    scores = scaled[sampling]
    forced = [False] * len(sampling)
    if any(rows[i].grammar is not None for i in sampling):
        bias = torch.zeros_like(scores)
        for k, i in enumerate(sampling):
            grammar = rows[i].grammar
            if grammar is not None:
                forced[k] = grammar.bias_into(bias[k])
        scores = scores + bias
    if temperature > 0:
        probs = torch.softmax(scores, dim=-1)
        chosen = [int(torch.multinomial(probs[k], 1, generator=rows[i].generator).item()) for k, i in enumerate(sampling)]
    else:
        chosen = scores.argmax(dim=-1).tolist()
    for k, i in enumerate(sampling):
        token = chosen[k]
        # The model's own logprob of the token, never the grammar-masked one.
        logprob = float(scaled[i, token] - lse[i]) if lse is not None else 0.0
        rows[i].take(token, logprob, forced[k], stop_ids)
        rows[i].fast_forward(stop_ids)
