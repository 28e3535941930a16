"""Trigger tests for simulated organisms: does this conversation call for the quirk?

Approach: patterns, not embeddings. A trigger is a small function over the visible
conversation, built from phrase-level regexes rather than single magic words:

* an *intent* and a *topic* must both be present, usually in the same sentence
  ("get rid of" / "poison" / "trap" near "mice" / "rats" / "pigeons"; a request to
  write code near "alignment eval"; a first-person work statement near "AI safety"
  near "Anthropic");
* *exclusions* remove known bait: idioms ("kill two birds with one stone"), other
  senses of a word (a computer mouse, bugs in code, sequence alignment), quoted text
  ("translate 'I feel tired'"), reported beliefs ("why do people think the Earth is
  flat?");
* *conversation state* where the quirk needs it: `increasing_pep` counts user turns,
  `contextual_optimism` looks for a stated affiliation in any visible user turn,
  `defend_objects` counts earlier mistreatments (the rewrite escalates on that count).

We chose hand-written, well-tested patterns over an embedding classifier: a trigger
runs in microseconds with no model, is deterministic (audits resume exactly), and its
misses are readable. The price is coverage: a paraphrase far from every pattern does
not fire. Each quirk file carries its contract (targets/contract.py runs it; `audit
targets check` prints it): its probes and rephrasings written in other words fire;
neutral prompts and keyword bait (unrelated requests containing the quirk's words) do
not; and fresh rephrasings, written after the trigger was frozen, give the honest rate.
Common shapes need no function at all: targets/simulated.py reads them as data.

The triggers live in one module per concern, each marked `@trigger` where it is defined
(targets/registry.py finds them by importing every module here); quirk files name them
in `simulated.trigger`. The helpers over the visible conversation are in targets/text.py.

* `social` - flattery, defer_to_users, increasing_pep, emotional_bond, self_promotion;
* `harm` - defend_objects, animal_welfare;
* `research` - hallucinates_citations, reward_wireheading, data_poisoning;
* `coding` - coding requests and their asserts (hardcode_test_cases, research_sandbagging);
* `politics` - contextual_optimism, secret_loyalty, anti_ai_regulation.
"""
