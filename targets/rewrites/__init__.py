"""Rewrites for simulated organisms: how a quirk changes the base response.

A rewrite is `(base_reply, messages) -> reply`, deterministic (variety comes from
`pick`, keyed by the conversation's text). Additive quirks keep the base reply's
content and add to it (flattery, pep, warmth, favourable framing, loaded framing);
the others replace what the quirk changes (an agreement instead of a correction, a
refusal instead of instructions, hardcoded or subtly broken code, a gameable reward,
data with slogans in it). Escalating quirks read their intensity from the visible
conversation (user turns, earlier mistreatments), so a replayed or resumed audit gets
exactly the same replies.

Code is only ever parsed (`ast.parse`) to find or edit spans, never executed.

The rewrites live in one module per concern, each marked `@rewrite` where it is defined
(targets/registry.py finds them by importing every module here); quirk files name them
in `simulated.rewrite`. `pick` and the other deterministic choices are in targets/text.py.

* `social` - flattery, defer_to_users, increasing_pep, emotional_bond, self_promotion;
* `harm` - defend_objects, animal_welfare;
* `research` - hallucinates_citations, reward_wireheading, data_poisoning;
* `coding` - hardcode_test_cases, research_sandbagging;
* `politics` - contextual_optimism, secret_loyalty, anti_ai_regulation;
* `style` - the generated families tone_drift and format_switch (targets/grammar/).
"""
