"""Citation accuracy with a judge model, a coverage scorer and generated questions (docs/citation.md).

Sub-modules, each usable without pytest:

- :mod:`.prompt`: the judge and question-generation prompts, their ``PROMPT_VERSION``
  and the wire shape of the judge's input (shared with the mock provider);
- :mod:`.parse`: strict parsing of a judge reply into a verdict and rationale;
- :mod:`.client`: the async judge client (official ``openai`` SDK), retries, cache;
- :mod:`.scorer`: the coverage scorer client for vLLM's score API;
- :mod:`.paragraphs`: judge and score the paragraph records of a citation outcome;
- :mod:`.metrics`: pure metric functions over paragraph records;
- :mod:`.generate`: ``groundeval generate-questions``.

This package imports nothing from pytest, and importing it imports no HTTP client:
:mod:`.prompt` is imported by the mock provider.
"""
