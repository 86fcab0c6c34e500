"""The GIL is released while simulating, Ctrl-C stops a run, progress is reported."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import retrystorm

from conftest import REPO, SCENARIOS

OUTAGE = SCENARIOS / "outage-herd.toml"


def test_two_threads_simulate_at_the_same_time():
    # Each thread's progress callback records (time, done, total); with the GIL held for a
    # whole run, one run could not progress while the other is between its first and last run.
    logs = {0: [], 1: []}

    def work(i):
        retrystorm.compare(
            OUTAGE,
            jitter=["none", "full"],
            replications=40,
            threads=1,
            set={"tenant.main.clients": 2000},
            progress=lambda done, total: logs[i].append((time.monotonic(), done, total)),
        )

    threads = [threading.Thread(target=work, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    def midway(log):
        inside = [t for t, done, total in log if 0 < done < total]
        assert inside, log
        return min(inside), max(inside)

    (a0, a1), (b0, b1) = midway(logs[0]), midway(logs[1])
    assert max(a0, b0) < min(a1, b1), "the two runs' progress did not overlap in time"
    assert logs[0][-1][1] == logs[0][-1][2] == 80


def test_progress_reports_every_run_done():
    seen = []
    retrystorm.compare(OUTAGE, jitter=["none", "full"], replications=3, set={"tenant.main.clients": 200},
                       progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (6, 6)
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))


def test_progress_true_prints_a_line(capsys):
    retrystorm.run(SCENARIOS / "mm1.toml", replications=2, progress=True)
    assert "retrystorm: 2/2 runs" in capsys.readouterr().out


def test_ctrl_c_stops_a_long_run_quickly():
    # A run of many minutes (outage-herd with 200,000 clients, 500 replications) interrupted
    # after 1.5 s: KeyboardInterrupt is raised well before the run could have ended.
    script = textwrap.dedent(
        f"""
        import sys, time, retrystorm
        started = time.monotonic()
        try:
            retrystorm.compare({str(OUTAGE)!r}, jitter=["none"], replications=500,
                               set={{"tenant.main.clients": 200000}}, max_memory="20GiB",
                               progress=lambda d, t: print("progress", d, t, flush=True))
        except KeyboardInterrupt:
            print("interrupted", time.monotonic() - started, flush=True)
            sys.exit(0)
        print("finished", flush=True)
        sys.exit(1)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=REPO)
    first = child.stdout.readline()
    assert first.startswith("progress"), first
    time.sleep(1.0)
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=120)
    stopped = time.monotonic() - sent
    assert child.returncode == 0, out
    assert "interrupted" in out
    # One run of 200,000 clients takes seconds; all 500 would take many minutes.
    assert stopped < 10, stopped


def test_a_panic_is_a_runtime_error_naming_a_bug_and_the_seed():
    from retrystorm import _native

    try:
        _native._panic_in_worker(1234)
    except RuntimeError as e:
        message = str(e)
    else:
        raise AssertionError("no RuntimeError")
    assert "retrystorm bug" in message and "seed 1234" in message and "deliberate panic" in message
    # The process lives on and simulates.
    assert len(retrystorm.run(SCENARIOS / "mm1.toml", replications=2).summary) > 0
