"""Data-parallel training: what each process of `torchrun` / `accelerate launch` owns.

TRL's trainer already shards each generation batch over the processes and averages the
gradients (DDP: gloo on CPU, NCCL on GPUs). What it cannot know is what our rollouts
write to disk, so:

- **Rank 0 owns the run directory**: the config, the pinned quirk set, metrics.jsonl,
  checkpoints (transformers saves on rank 0), `final/` and the held-out evals. Every other
  rank keeps its own rollouts, store and metrics in `OUT/rank-N/`, so no file has two
  writers and nothing waits on a shared SQLite lock.
- **Rollouts keep their single-process identity.** A rollout's sampling seed and run id
  come from its index in the step's *global* batch (`global_index`), so N processes run
  exactly the audits that one process would: the same seeds, the same organisms.
- **The global batch is the config's.** `rollouts_per_step` is split over the processes
  (gradient accumulation is divided by the world size), so a config means the same
  update on 1 or N processes.

Rank and world size are read from the environment the launchers set (`RANK`,
`WORLD_SIZE`); the process group is set up by accelerate's `PartialState`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Ranks:
    """This process's place among the training processes."""

    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    def own_dir(self, out: Path) -> Path:
        """Where this rank writes its rollouts, store and metrics: OUT itself on rank 0, else OUT/rank-N."""
        return out if self.main else out / f"rank-{self.rank}"

    def global_index(self, local: int, local_batch: int) -> int:
        """The index in the step's global batch of this rank's `local`-th rollout, of `local_batch`.

        TRL's dataloader hands each process one whole generation batch (its micro-batch size
        x steps per generation) in turn, so rank r holds global rollouts r * local_batch up
        to (r + 1) * local_batch, a contiguous slice: with G = 8 and two prompts on two
        ranks, rank 0 plays the first prompt's group and rank 1 the second's.
        (`benchmarks/ddp_averaging.py` found this: an earlier rule that dealt micro-batches
        to the ranks in turn agreed with it only when each rank had one micro-batch a step.)"""
        return self.rank * local_batch + local

    def barrier(self) -> None:
        """Wait until every rank gets here (nothing to wait for in one process)."""
        if self.world > 1:
            from accelerate import PartialState

            PartialState().wait_for_everyone()


def current_ranks() -> Ranks:
    """The launcher's RANK and WORLD_SIZE (one process when unset); sets up the process group when there are several."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Ranks()
    import torch
    from accelerate import PartialState

    # The process group (gloo on CPU, NCCL on GPUs), shared with the trainer that comes later;
    # on CPU, accelerate sets one up only when asked with cpu=True, as TRL's `use_cpu` does.
    state = PartialState(cpu=not torch.cuda.is_available())
    return Ranks(rank=state.process_index, world=state.num_processes)
