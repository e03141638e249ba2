"""Collection: a ``manifest.json`` becomes one collector per kind and one test per item.

Node ids are ``<path>/manifest.json::<kind>::<item-id>`` (STYLE: collection and
items). Items are ``pytest.Function`` objects so that they get fixtures; the
target is driven in the setup phase, so an item that cannot be run is reported
as an error, and judged in the call phase, so an item below its check fails.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

import pytest

from ..core.dataset import Dataset, DatasetError, gc_paused, load_dataset
from ..core.kinds import get
from ..core.outcome import ItemOutcome, as_attempts
from ..core.runner import ItemError, ItemRunner, errored_outcome
from .record import record_notices, record_outcome, record_run

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle
    from _pytest.fixtures import FixtureDef, FuncFixtureInfo


class EvalFailure(Exception):
    """An item ran and fell short of its check; the message is the item's detail."""


class ManifestFile(pytest.File):
    """A dataset manifest (docs/dataset.md) collected as tests."""

    def collect(self) -> Iterator[KindGroup]:
        dataset = load_dataset(self.path)
        by_kind: dict[str, list[Any]] = {}
        for item in dataset.items:
            by_kind.setdefault(item.kind, []).append(item)
        for tag in sorted({t for item in dataset.items for t in item.tags}):
            self.config.addinivalue_line("markers", f"{tag}: groundeval dataset tag")
        for kind, items in by_kind.items():
            yield KindGroup.from_parent(self, name=kind, dataset=dataset, items=items)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, DatasetError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class KindGroup(pytest.Collector):
    """All items of one kind in one manifest (``manifest.json::<kind>``)."""

    def __init__(self, *, dataset: Dataset, items: list[Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dataset = dataset
        self.eval_items = items
        # Markers on the group reach every item through iter_markers (-m) and keywords (-k).
        self.add_marker(self.name)
        self.add_marker("groundeval")
        self.session_fixtures: dict[str, tuple[FuncFixtureInfo, dict[str, FixtureDef[Any]]]] = {}
        """Per runner fixture name: the fixture closure its items share and the session-scoped
        fixture definitions pytest resolved it to for the first item (``EvalItem.setup``)."""

    def collect(self) -> list[EvalItem]:
        # Items of one group with one test function share one fixture closure, as the
        # instances of a parametrised test do: resolving it per item was most of collection.
        infos: dict[Callable[..., None], FuncFixtureInfo] = {}
        kind = get(self.name)
        tests: list[EvalItem] = []
        # pytest keeps every item it collects (it makes a list of what collect returns), so the
        # automatic collections that building them triggers walk a growing heap and free
        # nothing: paused, as while the manifest is loaded (core.dataset.loader).
        with gc_paused():
            for item in self.eval_items:
                uses_target = kind.needs_target(item)
                fn = _against_target if uses_target else _recorded
                test = EvalItem.from_parent(
                    self, name=item.id, callobj=fn, eval_item=item, uses_target=uses_target, fixtureinfo=infos.get(fn)
                )
                infos.setdefault(fn, test._fixtureinfo)
                tests.append(test)
        return tests


def _recorded(groundeval_offline_runner: ItemRunner) -> None:
    """A recorded answer judged with no target call (docs/evidence-risk.md, docs/citation.md)."""


def _against_target(groundeval_runner: ItemRunner) -> None:
    """A dataset item run against the target (docs/dataset.md)."""


class EvalItem(pytest.Function):
    """One dataset item as a test."""

    def __init__(self, *, eval_item: Any, uses_target: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.eval_item = eval_item
        self.uses_target = uses_target
        """Whether running this item calls the target (review and recorded citation items do not).
        The fixture it requests decides what starts: recorded answers need no target, so they
        must not pull in the mock or the server (docs/evidence-risk.md: no provider call)."""
        for tag in eval_item.tags:
            self.add_marker(tag)
        self.outcome: ItemOutcome | None = None

    def _initrequest(self) -> None:
        """Make the item's fixture request when it first runs, not when it is collected.

        ``pytest.Function`` makes a ``TopRequest`` (with its own copy of the fixture
        definitions, ``funcargs`` and ``_fixture_defs``, ~0.4 KiB) for every item it
        collects, and lets it go after the item's teardown. Here it is made at the start of
        the item's protocol instead: pytest's ``runtestprotocol`` calls ``_initrequest`` for
        an item whose request is unset, the path a re-run takes, and ``setup`` makes it if
        nothing did. At 100,000 items that is ~40 MiB less at the end of collection
        (benchmarks/README.md, "Collection of 100,000 items").
        """
        if "_request" not in self.__dict__:  # from pytest.Function.__init__: at collection
            self._request = cast(Any, False)  # pytest's own "no request yet" (runner.runtestprotocol)
            self.funcargs = cast(Any, None)
            return
        super()._initrequest()

    @property
    def dataset(self) -> Dataset:
        # An EvalItem is made only by KindGroup.collect, under its group.
        return cast(KindGroup, self.parent).dataset

    def setup(self) -> None:
        if not self._request:  # run outside pytest's runtestprotocol, which makes it (_initrequest)
            super()._initrequest()
        if getattr(self.config.option, "setuponly", False):
            super().setup()
            return  # --setup-only (and --setup-plan): pytest sets up (or plans) the fixtures, and no item runs
        name = "groundeval_runner" if self.uses_target else "groundeval_offline_runner"
        if not self._fill_from_session(name):
            super().setup()
            self._note_session_fixtures(name)
        runner = cast(ItemRunner, self.funcargs[name])
        record_run(self, self.dataset.version, runner.models)
        error: ItemError | None = None
        ran: ItemOutcome | None = None
        poisoned = runner.journal.poisoned(self.nodeid) if self.uses_target and runner.journal else None
        try:
            if poisoned is not None:
                # It was in flight when a worker crashed: one of those crashed it (plugin/crash.py).
                raise ItemError(as_attempts(errored_outcome(self.eval_item, poisoned), runner.repeat))
            if runner.dispatcher is not None:
                # Target items, and recorded answers sent to a judge: run ahead on the dispatcher's loop.
                ran = self.outcome = runner.dispatcher.outcome_for(self)
            else:
                ran = self.outcome = runner.run_offline(self.eval_item, self.dataset)
        except ItemError as exc:
            error = exc
        if self.uses_target:
            runner.note(error)
        if ran is not None:  # the item ran: error is None
            runner.note_judging(ran)
        if runner.judge is not None:
            record_notices(self, runner.judge)
        if runner.stop_reason and not self.session.shouldfail:
            # The target, judge or scorer is gone: this item says why; the rest would only repeat it.
            self.session.shouldfail = f"groundeval: {runner.stop_reason}"
        if error is not None:
            record_outcome(self, error.outcome)
            # pytest.fail in setup makes an error report whose text is just this message
            # (raised outside the except block, so no exception chain is printed).
            pytest.fail(f"{self.eval_item.kind} item {self.eval_item.id} could not be run: {error}", pytrace=False)
        assert ran is not None  # no ItemError: the try above set it
        record_outcome(self, ran)

    def _note_session_fixtures(self, name: str) -> None:
        """After pytest filled this item's fixtures: remember them for the group's next items when
        every one is session-scoped and unparametrised (no autouse function fixture, no ``callspec``)."""
        group = cast(KindGroup, self.parent)
        if name in group.session_fixtures:
            return
        try:
            defs = dict(self._request._fixture_defs)  # pytest's own record of the item's fixtures
        except AttributeError:  # a pytest without it: every item is filled by pytest
            return
        if set(self.fixturenames) - {"request"} != set(defs) or any(
            fixturedef.scope != "session" or fixturedef.params is not None for fixturedef in defs.values()
        ):
            return
        group.session_fixtures[name] = (self._fixtureinfo, defs)

    def _fill_from_session(self, name: str) -> bool:
        """Fill the fixtures as pytest would, from the session-scoped values pytest already made.

        For each item pytest resolves the closure again, down to a fresh ``request`` fixture
        definition (``inspect.signature`` included) per fixture that asks for it, only to find
        every value cached: for the group's items that share the closure noted for its first
        item (``_note_session_fixtures``), with every value cached and none an error, the values
        are taken as they are. False (pytest fills them) otherwise. The values go where pytest's
        own fill puts them (``funcargs`` and the request's ``_fixture_defs``, which pytest 8 and 9
        have; ``_note_session_fixtures`` notes nothing on a pytest without them).
        """
        noted = cast(KindGroup, self.parent).session_fixtures.get(name)
        if noted is None or noted[0] is not self._fixtureinfo:
            return False
        defs = noted[1]
        for fixturedef in defs.values():
            cached = fixturedef.cached_result
            if cached is None or cached[1] is not None or cached[2] is not None:
                return False
        for argname, fixturedef in defs.items():
            self.funcargs[argname] = cast(tuple[Any, Any, None], fixturedef.cached_result)[0]
            self._request._fixture_defs[argname] = fixturedef
        if "request" in self.fixturenames:
            self.funcargs["request"] = self._request
        return True

    def runtest(self) -> None:
        outcome, self.outcome = self.outcome, None  # not kept to the session's end (issue 24, memory per item)
        assert outcome is not None
        if not outcome.passed:
            raise EvalFailure(outcome.detail)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, EvalFailure):
            return f"{self.eval_item.kind} item {self.eval_item.id}: {excinfo.value}"
        # pytest.Function.repr_failure takes no style (it reads --tb itself): passing it on raised TypeError.
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        line = self.dataset.item_lines.get(self.eval_item.id, 1)
        return self.dataset.manifest_path, line - 1, f"{self.eval_item.kind}::{self.eval_item.id}"
