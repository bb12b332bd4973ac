"""Worker processes die with their parent however it dies, and a worker that dies names the
records it was scoring. Real processes, real signals."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ctxeval import RetrievalEvaluator, WorkerProcessError
from ctxeval.cli.flags import cli_text

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not Path("/proc/self/stat").exists(),
    reason="workers die with their parent through Linux's prctl(PR_SET_PDEATHSIG); the test "
    "finds them through /proc",
)

SRC = str(Path(__file__).resolve().parents[2] / "src")


def write_dataset(path: Path, n: int) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            record = {
                "id": f"q{i}",
                "retrieved_context": [f"chunk {i}", f"the answer is {i}"],
                "ground_truth_context": [f"the answer is {i}"],
            }
            out.write(json.dumps(record) + "\n")
    return path


# A parent that runs a slow workers=2 evaluation; each worker leaves its pid in a file, so the
# test knows the workers exist and which processes they are.
PARENT = """
import os, sys, time
import numpy as np
from ctxeval import RetrievalEvaluator

dataset, pids = sys.argv[1], sys.argv[2]
parent = os.getpid()

def slow(retrieved, ground_truth):
    if os.getpid() != parent:
        open(os.path.join(pids, str(os.getpid())), "w").close()
    time.sleep(0.02)
    return np.ones((len(retrieved), len(ground_truth)), dtype=bool)

print("started", flush=True)
RetrievalEvaluator(dataset, ["P@5"], matching=slow, workers=2, batch_size=2,
                   progress=False).run()
print("finished", flush=True)
"""


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, only not yet reaped


def start_parent(tmp_path: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    dataset = write_dataset(tmp_path / "slow.jsonl", 2_000)
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {**os.environ, "PYTHONPATH": SRC}
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(PARENT), str(dataset), str(pids)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        workers = [int(p.name) for p in pids.iterdir()]
        if len(workers) >= 2:
            return parent, workers
        if parent.poll() is not None:
            break
        time.sleep(0.05)
    parent.kill()
    out, err = parent.communicate()
    pytest.fail(f"the workers did not start: {out.decode()} {err.decode()}")


def assert_gone(workers: list[int], seconds: float = 5) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(pid) for pid in workers):
        time.sleep(0.05)
    left = [pid for pid in workers if alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)  # leave nothing behind, then fail
    assert not left, f"worker processes {left} outlived their parent"


@pytest.mark.parametrize(
    ("signum", "returncodes"),
    [
        (signal.SIGTERM, {128 + signal.SIGTERM}),  # raised as SystemExit(143), workers stopped
        (signal.SIGINT, {1, -signal.SIGINT}),  # KeyboardInterrupt, workers stopped
        (signal.SIGKILL, {-signal.SIGKILL}),  # no handler runs: PR_SET_PDEATHSIG does it
    ],
    ids=["SIGTERM", "SIGINT", "SIGKILL"],
)
def test_workers_die_with_their_parent(
    tmp_path: Path, signum: signal.Signals, returncodes: set[int]
) -> None:
    parent, workers = start_parent(tmp_path)
    parent.send_signal(signum)
    try:
        # A caller waiting on the output returns: no worker holds stdout or stderr open.
        out, err = parent.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        parent.kill()
        assert_gone(workers, 0)
        raise
    assert parent.returncode in returncodes, err.decode()
    assert b"finished" not in out
    assert_gone(workers)


def test_popen_terminate_and_capture_output_return(tmp_path: Path) -> None:
    parent, workers = start_parent(tmp_path)
    parent.terminate()
    try:
        parent.communicate(timeout=10)
    finally:
        parent.kill()
        assert_gone(workers)
    assert parent.returncode == 128 + signal.SIGTERM


@pytest.mark.parametrize("source", ["file", "partitions", "list"])
def test_a_killed_worker_names_the_records_and_what_to_do(tmp_path: Path, source: str) -> None:
    # A small file or a list is read here and sent to the workers in batches; a file read in
    # partitions is read by the workers themselves: either way the message names the records
    # the dead worker held.
    dataset = write_dataset(tmp_path / "d.jsonl", 40)
    parent = os.getpid()

    def killed_on_q13(retrieved: list[str], ground_truth: list[str]) -> list[list[bool]]:
        if os.getpid() != parent and "the answer is 13" in ground_truth:
            os.kill(os.getpid(), signal.SIGKILL)  # as the out-of-memory killer would
        return [[True] * len(ground_truth) for _ in retrieved]

    data: object = dataset
    if source == "list":
        data = [json.loads(line) for line in dataset.read_text().splitlines()]
    evaluator = RetrievalEvaluator(
        data,
        ["P@5"],
        matching=killed_on_q13,
        workers=2,
        batch_size=4,
        progress=False,
        partition_bytes=600 if source == "partitions" else None,
    )
    with pytest.raises(WorkerProcessError) as caught:
        evaluator.run()
    message = str(caught.value)
    # The part holding line 14 (q13) was in flight, and the message names its range.
    first, last = message.split(" from ", 1)[1].split(". Run with", 1)[0].split(" to ")
    if source != "list":
        first_line = int(first.split(":")[1].split()[0])
        last_line = int(last.split(":")[1].split()[0])
        assert first_line <= 14 <= last_line
        assert f"{dataset}:" in first
    else:
        assert first.startswith("record ")
        assert int(first.split()[1]) <= 13 <= int(last.split()[1])
    # which worker, killed how, and what to do, in one line, in Python's words ...
    assert message.startswith("worker process "), message
    assert "was killed by the system (SIGKILL: most often the out-of-memory killer" in message
    assert message.endswith(
        "Run with fewer workers (workers=1) or smaller batches (batch_size=2), or give the run "
        "more memory"
    )
    assert "\n" not in message
    # ... and in the command line's
    assert cli_text(caught.value).endswith(
        "Run with fewer workers (--workers 1) or smaller batches (--batch-size 2), or give the "
        "run more memory"
    )


@pytest.mark.parametrize("partition_bytes", [None, 1_000])
def test_a_run_stopped_by_an_exception_stops_its_workers(
    tmp_path: Path, partition_bytes: int | None
) -> None:
    # A bad record with on_error="raise" ends the run while workers are busy with later batches
    # that take seconds: they are killed at once (the evaluator closes the pool's iterator)
    # rather than left to finish.
    dataset = write_dataset(tmp_path / "d.jsonl", 40)
    lines = dataset.read_text().splitlines()
    lines[5] = '{"id": "bad"}'
    dataset.write_text("\n".join(lines) + "\n")
    before = set(multiprocessing_children())

    def slow_after_q7(retrieved: list[str], ground_truth: list[str]) -> list[list[bool]]:
        if int(ground_truth[0].rsplit(" ", 1)[1]) > 7:
            time.sleep(3)
        return [[True] * len(ground_truth) for _ in retrieved]

    started = time.monotonic()
    with pytest.raises(ValueError, match="bad"):
        RetrievalEvaluator(
            dataset,
            ["P@5"],
            matching=slow_after_q7,
            workers=2,
            batch_size=2,
            progress=False,
            partition_bytes=partition_bytes,
        ).run()
    assert time.monotonic() - started < 2.5  # finishing the batches in flight takes >= 6 s
    assert set(multiprocessing_children()) <= before


def multiprocessing_children() -> list[int]:
    import multiprocessing

    return [p.pid for p in multiprocessing.active_children() if p.pid is not None]


# --- through the real command line -----------------------------------------------------------


def write_slow_dataset(path: Path, n: int) -> Path:
    # fuzzy-chunk matching of 20 chunks of 40 words: a few milliseconds a record.
    words = [f"w{i}" for i in range(500)]
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            chunks = [
                " ".join(words[(i * 7 + j * 13 + w) % 500] for w in range(40)) for j in range(20)
            ]
            record = {
                "id": f"q{i}",
                "retrieved_context": chunks,
                "ground_truth_context": chunks[:3],
            }
            out.write(json.dumps(record) + "\n")
    return path


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def start_cli(tmp_path: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    if not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists():
        pytest.skip("this kernel has no /proc/<pid>/task/<tid>/children to find the workers")
    dataset = write_slow_dataset(tmp_path / "slow.jsonl", 800)
    cli = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ctxeval",
            "evaluate",
            str(dataset),
            "--workers",
            "2",
            "--match",
            "fuzzy-chunk",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and cli.poll() is None:
        workers = children(cli.pid)
        if len(workers) >= 2:
            time.sleep(0.3)  # let them take their batches
            return cli, workers
        time.sleep(0.05)
    cli.kill()
    pytest.fail(f"the workers did not start: {cli.communicate()[1].decode()}")


def test_cli_a_killed_worker_is_one_line_naming_the_records(tmp_path: Path) -> None:
    cli, workers = start_cli(tmp_path)
    os.kill(workers[0], signal.SIGKILL)  # as the out-of-memory killer would
    try:
        _, err = cli.communicate(timeout=30)
    finally:
        cli.kill()
        assert_gone(workers)
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        f"ctxeval: error: worker process {workers[0]} was killed by the system (SIGKILL"
    ), lines
    # Read here and sent in batches: the records by line and id; read by the workers in
    # partitions (this file is large enough): the part of the file, by lines or bytes.
    assert "slow.jsonl:1 (record 'q0')" in lines[0] or "slow.jsonl" in lines[0]
    assert "--workers 1" in lines[0]
    assert "--batch-size 128" in lines[0]
    assert cli.returncode == 2  # the fix is an option (see docs/decisions.md), not a bug (3)


# The CLI in a process whose workers kill themselves (SIGKILL, as the out-of-memory killer)
# when they score a record whose id is given: no timing, no search for the workers.
DYING_CLI = """
import os, signal, sys
import ctxeval.parallel.workers as workers
from ctxeval.cli import run

parent, real = os.getpid(), workers.score_columns

def dying(plan, batch):
    if os.getpid() != parent and any(item.id == sys.argv[1] for item in batch):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(plan, batch)

workers.score_columns = dying  # forked workers inherit it
sys.exit(run(sys.argv[2:]))
"""


@pytest.mark.parametrize("from_config", [False, True])
def test_cli_a_worker_killed_by_the_system_is_one_line_exit_2(
    tmp_path: Path, from_config: bool
) -> None:
    dataset = write_dataset(tmp_path / "d.jsonl", 40)
    extra = ["--batch-size", "4"]  # 10 batches: several in flight
    if from_config:  # the batch size from a config file
        config = tmp_path / "ctxeval.toml"
        config.write_text("[evaluate]\nbatch-size = 4\n")
        extra = ["--config", str(config)]
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            DYING_CLI,
            "q13",
            "evaluate",
            str(dataset),
            "--workers",
            "2",
            *extra,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    (line,) = lines
    assert line.startswith("ctxeval: error: worker process "), line
    assert " was killed by the system (SIGKILL: most often the out-of-memory killer, when " in line
    assert line.endswith(
        "Run with fewer workers (--workers 1) or smaller batches (--batch-size 2), or give the "
        "run more memory"
    ), line
    assert "d.jsonl:" in line  # the records it held
    assert "Traceback" not in done.stderr


def test_cli_sigterm_stops_the_workers(tmp_path: Path) -> None:
    cli, workers = start_cli(tmp_path)
    cli.terminate()
    try:
        _, err = cli.communicate(timeout=10)
    finally:
        cli.kill()
        assert_gone(workers)
    assert cli.returncode == 128 + signal.SIGTERM
    assert b"Traceback" not in err


def test_a_worker_dying_while_a_batch_is_read_names_the_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Found in CI, under load: the pool broke between two submits, and submit raised a raw
    # BrokenProcessPool. Made certain here with a pool whose first task fails and whose second
    # submit finds it broken.
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    import ctxeval.parallel.workers as workers_module
    from ctxeval.records.model import RecordError

    class BrokenPool:
        def __init__(self, *args: object, **kwargs: object) -> None:
            self.submitted = 0

        def submit(self, *args: object) -> Future[object]:
            self.submitted += 1
            if self.submitted > 1:
                raise BrokenProcessPool("A child process terminated abruptly")
            future: Future[object] = Future()
            future.set_exception(BrokenProcessPool("A child process terminated abruptly"))
            return future

        def shutdown(self, **kwargs: object) -> None:
            pass

    monkeypatch.setattr(workers_module, "ProcessPoolExecutor", BrokenPool)
    batches = [
        [RecordError(i, f"q{i}", f"d.jsonl:{i + 1}", None, "bad") for i in range(j, j + 2)]
        for j in (0, 2, 4)
    ]
    with pytest.raises(WorkerProcessError) as caught:
        list(workers_module.score_in_workers(None, batches, 2))  # type: ignore[arg-type]
    assert "2 record(s), from d.jsonl:1 (record 'q0') to d.jsonl:2 (record 'q1')" in str(
        caught.value
    )
    # A local partitioned run's pool: a submit that finds the pool broken is the same error,
    # not a raw BrokenProcessPool (which the command line would call a bug).
    block = type("Block", (), {"name": "d.jsonl", "format": "jsonl", "start": 0, "end": 600})()
    with workers_module.LocalPool(None, 4, batch_size=64) as pool:  # type: ignore[arg-type]
        with pytest.raises(WorkerProcessError) as caught:
            pool.submit(print, block).result()
        assert str(caught.value).endswith(
            "while reading or scoring the lines of d.jsonl that start in bytes 0 to 600. Run "
            "with fewer workers (workers=2) or smaller batches (batch_size=32), or give the run "
            "more memory"
        )
        with pytest.raises(WorkerProcessError, match=r"^a worker process was killed by the sys"):
            pool.submit(print, block)
