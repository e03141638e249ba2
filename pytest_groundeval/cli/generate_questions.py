"""``groundeval generate-questions``: citation items generated from a dataset's corpus (docs/citation.md).

The strategies, the reply format and what is written are ``judge/generate.py``'s.

Exit codes: 0 written, 2 usage error or unusable input, 1 the LLM failed or fewer
than N questions could be generated (nothing is written then).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from ..core.dataset import DatasetError, load_dataset
from ..judge.generate import generate_questions, write_generated
from ._args import Parser


def generate_main(argv: list[str]) -> int:
    """``groundeval generate-questions --dataset DIR --n N --llm-url URL --model M --out DIR``.

    Returns:
        0 when the items were written; 2 for a usage error or unusable input; 1 when the
        LLM failed or fewer than N questions could be generated (nothing is written then).
    """
    parser = Parser(
        prog="groundeval generate-questions",
        description="Generate citation items from a dataset's corpus with an OpenAI-compatible LLM",
    )
    parser.add_argument(
        "--dataset", required=True, metavar="DIR", help="Source dataset (its corpus seeds the questions)"
    )
    parser.add_argument("--n", type=int, required=True, help="Questions to generate")
    parser.add_argument("--llm-url", required=True, metavar="URL", help="OpenAI-compatible base URL")
    parser.add_argument("--model", required=True, metavar="M", help="Model name")
    parser.add_argument("--out", required=True, metavar="DIR", help="Directory of the new dataset")
    parser.add_argument("--seed", type=int, default=0, help="RNG seed (default 0)")
    parser.add_argument("--seeded-ratio", type=float, default=2 / 3, help="Share of seeded questions (default 2/3)")
    parser.add_argument("--topic", action="append", help="A free-strategy topic (repeatable; default: from the corpus)")
    parser.add_argument("--pace-ms", type=float, default=0.0, help="Milliseconds between requests (default 0)")
    args = parser.parse_or_status(argv)
    if isinstance(args, int):
        return args
    if args.n < 1 or not 0.0 <= args.seeded_ratio <= 1.0 or args.pace_ms < 0:
        print("groundeval generate-questions: --n must be at least 1, --seeded-ratio in [0, 1], --pace-ms >= 0",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        dataset = load_dataset(args.dataset)
    except DatasetError as exc:
        print(f"groundeval generate-questions: {exc}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        # fmt: off
        items = asyncio.run(
            generate_questions(
                dataset, n=args.n, llm_url=args.llm_url, model=args.model,
                api_key=os.environ.get("GROUNDEVAL_LLM_API_KEY"), seed=args.seed, seeded_ratio=args.seeded_ratio,
                topics=args.topic, pace_ms=args.pace_ms, progress=sys.stderr.isatty(),
            )
        )
        # fmt: on
    except RuntimeError as exc:
        print(f"groundeval generate-questions: {exc}", file=sys.stderr)
        return 1
    if len(items) < args.n:
        print(f"groundeval generate-questions: only {len(items)} distinct question(s) of {args.n} after "
              f"{3 * args.n} attempts; nothing written", file=sys.stderr)  # fmt: skip
        return 1
    out = write_generated(dataset, items, Path(args.out))
    seeded = sum(1 for i in items if i["origin"]["strategy"] == "seeded")
    print(f"wrote {len(items)} citation items ({seeded} seeded, {len(items) - seeded} free) to {out} "
          f"in {time.perf_counter() - started:.1f} s")  # fmt: skip
    return 0
