"""A writer process for the history tests: records a run in batches, as the pytest controller does.

Usage: ``python writer_process.py URL LABEL ITEMS BATCH MODE [START_AT]``

MODE ``finish`` records every item and finishes the run; ``slow`` pauses 3 ms
after each item, so that a SIGKILL from the test lands mid-run. After each committed
batch it prints ``recorded <run id> <count>``. ``START_AT`` (epoch seconds)
delays the first write so that two writers start at the same moment.
"""

from __future__ import annotations

import sys
import time

from pytest_groundeval.history import HistoryStore, RunRecorder


def main() -> None:
    url, label, n_items, batch, mode = sys.argv[1:6]
    start_at = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
    store = HistoryStore.open(url)  # two processes may create the schema at once
    while time.time() < start_at:
        time.sleep(0.005)
    recorder = RunRecorder(
        store, {"dataset": {"version": "v"}, "models": {}}, label=label, batch_size=int(batch), max_delay_s=60
    )
    printed = 0
    for i in range(int(n_items)):
        recorder.add(
            {
                "id": f"{label}-{i}",
                "kind": "qa",
                "pass": i % 7 != 0,
                "latencyMs": float(i),
                "tags": [f"t{i % 3}"],
                "toolTrace": [{"tool": "search", "hits": [str(i)]}],
            }
        )
        if recorder.recorded != printed:  # a batch was committed by the writer thread
            printed = recorder.recorded
            print(f"recorded {recorder.run_id} {printed}", flush=True)
        if mode == "slow":
            time.sleep(0.003)
    recorder.finish(metrics={"errors": 0, "items": int(n_items)}, gate={"passed": True, "checks": []})
    print(f"finished {recorder.run_id} {recorder.recorded}", flush=True)


if __name__ == "__main__":
    main()
