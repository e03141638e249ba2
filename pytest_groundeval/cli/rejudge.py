"""``groundeval rejudge``: judge a recorded run's answers again, without the target (docs/history.md, "Rejudging").

Takes ``--history URL`` (else ``GROUNDEVAL_HISTORY``, else the default
``.groundeval/history.db`` in the working directory). The judge options are the
plugin's (docs/options.md): ``--judge-url`` with ``--judge-model`` (repeat it for a
jury), or ``--judges FILE``, ``--judge-policy``, ``--judge-concurrency``
(docs/judges.md, "Juries"). ``--as-new-run`` rejudges a copy of the run, so
``groundeval history compare RUN COPY`` compares the two judges on the same answers.
Exit codes: 0 ok, 1 some paragraph was left without a parseable verdict (its new
judgment set is kept but not made current), 2 usage error or unusable database.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from ..history.engine import HistoryError, url_from_sources
from ..history.rejudge import Judge, rejudge_run, tty_progress
from ..history.rejudge_judge import judge_from_args
from ..history.run_copy import copy_run
from ..history.store import HistoryStore
from ._args import Parser, add_history_argument

JudgeFactory = Callable[[argparse.Namespace], Judge]
"""Builds the judge for ``rejudge`` from its parsed arguments (``judge_url``, ``judge_model`` (a list),
``judges``, ``judge_policy``, ``judge_concurrency``)."""


def _rejudge_parser() -> Parser:
    parser = Parser(prog="groundeval rejudge", description="Judge a recorded run's answers again, without the target")
    parser.add_argument("run", help="Run id, unique id prefix, 'latest' or 'latest~N'")
    parser.add_argument("--all", action="store_true", help="Judge every paragraph again, not only unjudged ones")
    parser.add_argument("--judge-url", help="OpenAI-compatible chat endpoint of the judge")
    parser.add_argument("--judge-model", action="append", help="Judge model name; repeat it for a jury at that URL")
    parser.add_argument("--judges", metavar="FILE", help="JSON file of a jury's judges: [{url, model, apiKeyEnv}]")
    parser.add_argument("--judge-policy", help="How a jury's verdicts become one: majority, unanimous or strictest")
    parser.add_argument("--judge-concurrency", type=int, help="Requests in flight at once per judge (default 4)")
    parser.add_argument(
        "--as-new-run",
        action="store_true",
        help="Copy the run as a new run and judge every paragraph of the copy; the stored run is left as it is",
    )
    parser.add_argument("--label", help="Label of the copy made by --as-new-run")
    add_history_argument(parser)
    return parser


def rejudge_main(argv: list[str], judge_factory: JudgeFactory | None = None) -> int:
    """``groundeval rejudge RUN [--all] [--as-new-run [--label L]] (--judge-url U --judge-model M … | --judges F)
    [--judge-policy P] [--judge-concurrency N] [--history URL]``.

    Args:
        argv: Arguments after ``rejudge``.
        judge_factory: Builds the judge from the parsed arguments; raises ``HistoryError``
            when it cannot. The default is the LLM judge (``history.rejudge_judge.judge_from_args``):
            ``--judge-url`` and ``--judge-model`` are then required.

    Returns:
        0 when the new judgment set is complete and became current (or nothing needed
        judging); 1 when some paragraph got no parseable verdict (the set is kept as an
        incomplete attempt, nothing current replaced; stderr says how many and why);
        2 for a usage error, an unknown or unfinished run, or an unusable database.
    """
    args = _rejudge_parser().parse_or_status(argv, "groundeval rejudge")
    if isinstance(args, int):
        return args
    if args.label is not None and not args.as_new_run:
        print("groundeval rejudge: --label names the copy --as-new-run makes; add --as-new-run", file=sys.stderr)
        return 2
    try:
        judge = (judge_factory or judge_from_args)(args)
        try:
            with HistoryStore.open(url_from_sources(args.history), create=False) as store:
                progress = tty_progress(sys.stderr) if sys.stderr.isatty() else None
                ref = args.run
                if args.as_new_run:
                    original = store.resolve_run(args.run)
                    ref = copy_run(store, original, label=args.label)
                    print(f"run {ref} is a copy of run {original}, judged again below; compare them with "
                          f"`groundeval history compare {original[:12]} {ref[:12]}`")  # fmt: skip
                result = rejudge_run(store, ref, judge, all_paragraphs=args.all or args.as_new_run, progress=progress)
        finally:
            close = getattr(judge, "close", None)
            if callable(close):
                close()
    except HistoryError as exc:
        print(f"groundeval rejudge: {exc}", file=sys.stderr)
        return 2
    failed = result.errors + result.unparseable
    print(f"run {result.run_id}: {result.judged} of {result.candidates} paragraph(s) given a parseable verdict, "
          f"{failed} failed ({result.errors} judge error(s), {result.unparseable} unparseable)")  # fmt: skip
    for message in result.error_messages:
        print(f"  judge failed: {message}")
    if result.set_id is None:
        print("nothing to judge: every paragraph has a parseable verdict (--all judges them again)")
    elif result.complete:
        print(f"judgment set {result.set_id} (judge {result.judge_model or '-'}) is complete and now current; "
              f"set {result.replaced_set} is kept")  # fmt: skip
    else:
        print(
            f"groundeval rejudge: judgment set {result.set_id} is incomplete and kept as an attempt: {result.reason}; "
            f"the current set ({result.replaced_set}), the run's metrics and its gate are unchanged (docs/history.md)",
            file=sys.stderr,
        )
    if result.gate is not None:
        unchanged = "" if result.complete and result.set_id is not None else " (unchanged)"
        print(f"gate: {'PASS' if result.gate.get('passed') else 'FAIL'}{unchanged}")
    if result.metrics is not None:
        shown = {k: result.metrics.get(k) for k in ("citationSupportedRate", "wrongSpeakerRate", "coverageScoreMean")}
        print("metrics: " + json.dumps(shown))
        if result.metrics.get("verdictDistributionByModel"):  # a jury's (docs/judges.md, "Juries")
            jury = {k: result.metrics.get(k) for k in ("judgeAlpha", "judgeKappa", "judgeKappaByModel")}
            print("jury: " + json.dumps(jury))
    return 0 if result.complete else 1
