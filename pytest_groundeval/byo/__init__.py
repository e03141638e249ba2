"""Bring your own data (docs/byo.md): ``groundeval import`` and ``groundeval init``.

- ``rows``: reading the rows of another tool's file (a plain CSV or JSON Lines file,
  ragas, deepeval, promptfoo) into one shape, every bad row named by its line;
- ``imported``: those rows as a dataset of ``citation`` items (manifest, corpus,
  hashes, floors, README), written whole or not at all;
- ``init``: the files of a new project (an example dataset, a ``conftest.py`` with a
  Python target, ``pytest.ini``, a GitHub Actions workflow), from ``template/``.

The commands are ``cli/importer.py`` and ``cli/init.py``. Nothing here imports pytest.
"""
