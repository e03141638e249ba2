"""Citation accuracy with a judge model, a coverage scorer and generated questions (docs/citation.md).

Sub-modules, each usable without pytest:

- :mod:`.prompt`: the judge and question-generation prompts and their ``PROMPT_VERSION``
  (shared with the mock provider);
- :mod:`.parse`: strict parsing of a judge reply into a verdict and rationale;
- :mod:`.client`: the async judge client (official ``openai`` SDK), retries, cache: a
  ``core.judging.Judge``;
- :mod:`.scorer`: the coverage scorer client for vLLM's score API: a ``core.judging.Scorer``;
- :mod:`.generate`: ``groundeval generate-questions``.

The judge's vocabulary (verdicts, input shape, results) and the protocols the citation
kind asks (``core.judging``) live in ``core``, which never imports this package; asking
a judge about a citation answer's paragraphs is ``core.kinds.citation.assess``.

This package imports nothing from pytest, and importing it imports no HTTP client:
:mod:`.prompt` is imported by the mock provider.
"""
