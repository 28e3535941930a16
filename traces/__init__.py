"""Trace analysis: which behaviours of an auditor the reward paid for.

`load` reads a training run (OUT/rollouts.jsonl, with OUT/rollouts.db for the reports)
or an eval directory (results.json, with its store); `behaviours` extracts what each
rollout did from what is stored; `effects` measures each behaviour's frequency over
steps and its effect on reward and advantage, alone and with the rewarded behaviours
held fixed; `labels` names what the numbers show (rewarded, penalised, vestigial,
benchmark-shaped, collapsed), each with its evidence. `audit traces` runs them.
"""
