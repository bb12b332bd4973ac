"""Issue 10 through the real entry point: outputs never replace inputs, paths and names fail fast,
failed saves lose nothing, signals leave no temp files, files read back what was written."""

from __future__ import annotations

import csv
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctxeval.io.readers import read_records
from ctxeval.io.trec import read_trec_qrels, read_trec_run
from ctxeval.results import EvaluationResult

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "fixtures" / "records.jsonl"
RUNS = ROOT / "fixtures" / "runs"
ID_RECORDS = [
    {"id": "q1", "retrieved_ids": ["d1", "d2", "d3"], "qrels": {"d1": 1, "d3": 2}},
    {"id": "q2", "retrieved_ids": ["d4", "d5"], "qrels": {"d5": 1}},
]


def ctxeval(
    *args: str | Path, stdin: str | None = None, **popen: object
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "ctxeval", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin,
        check=False,
        **popen,
    )


def _dataset(tmp_path: Path, name: str = "d.jsonl") -> Path:
    path = tmp_path / name
    shutil.copy(RECORDS, path)
    return path


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _hidden(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


# -- 1. an output that is an input is refused before any work --------------------------------
def _aliases(tmp_path: Path, data: Path) -> dict[str, Path]:
    symlink = tmp_path / "link.jsonl"
    symlink.symlink_to(data)
    hardlink = tmp_path / "hard.jsonl"
    os.link(data, hardlink)
    return {
        "same": data,
        "dotted": tmp_path / "sub" / ".." / data.name,
        "symlink": symlink,
        "hardlink": hardlink,
    }


@pytest.mark.parametrize("alias", ["same", "dotted", "symlink", "hardlink"])
def test_evaluate_output_that_is_the_input_is_refused(tmp_path: Path, alias: str) -> None:
    data = _dataset(tmp_path)
    (tmp_path / "sub").mkdir()
    before = data.read_bytes()
    output = _aliases(tmp_path, data)[alias]
    done = ctxeval("evaluate", data, "-o", output)
    assert done.returncode == 2, done.stderr
    assert f"-o/--output {output} is also the input" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""  # nothing was scored
    assert data.read_bytes() == before


def test_convert_target_that_is_the_source_is_refused(tmp_path: Path) -> None:
    data = _dataset(tmp_path)
    before = data.read_bytes()
    for target in (data, _aliases(tmp_path, data)["hardlink"]):
        done = ctxeval("convert", data, target)
        assert done.returncode == 2
        assert f"TARGET {target} is also the input" in done.stderr
    assert data.read_bytes() == before


def test_convert_qrels_out_that_is_an_input_is_refused(tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "ids.jsonl", ID_RECORDS)
    before = data.read_bytes()
    done = ctxeval("convert", data, tmp_path / "run.trec", "--qrels-out", data)
    assert done.returncode == 2
    assert f"--qrels-out {data} is also the input" in done.stderr
    done = ctxeval("convert", data, tmp_path / "run.trec", "--qrels-out", tmp_path / "run.trec")
    assert done.returncode == 2
    assert "--qrels-out" in done.stderr
    assert data.read_bytes() == before
    assert not (tmp_path / "run.trec").exists()


def test_convert_trec_run_onto_its_qrels_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 x\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    done = ctxeval("convert", run, qrels, "--qrels", qrels)
    assert done.returncode == 2
    assert f"TARGET {qrels} is also the input" in done.stderr
    assert qrels.read_text() == "q1 0 d1 1\n"


def test_evaluate_trec_output_onto_the_run_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"  # a TREC run with a misleading name
    run.write_text("q1 Q0 d1 1 2.0 x\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    done = ctxeval("evaluate", "--run", run, "--qrels", qrels, "-o", run)
    assert done.returncode == 2
    assert "is also the input" in done.stderr
    assert run.read_text() == "q1 Q0 d1 1 2.0 x\n"


def test_compare_report_that_is_an_input_is_refused(tmp_path: Path) -> None:
    a = _dataset(tmp_path, "a.jsonl")
    b = _dataset(tmp_path, "b.html")  # an input that has the report's extension
    before = b.read_bytes()
    done = ctxeval("compare", a, b, "--report", b, "--format", "json")
    assert done.returncode == 2
    assert f"--report {b} is also the input" in done.stderr
    assert "evaluating" not in done.stderr  # refused before any scoring
    assert b.read_bytes() == before


# -- 2. output paths, gates and --metric names fail fast --------------------------------------
@pytest.mark.parametrize(
    ("output", "fragment"),
    [
        ("{tmp}", "is a directory"),
        ("{tmp}/out.txt", "unknown extension '.txt'"),
        ("{tmp}/out", "unknown extension '(none)'"),
        ("{tmp}/file.jsonl/out.jsonl", "is a file, not a directory"),
    ],
)
def test_bad_output_paths_fail_before_scoring(tmp_path: Path, output: str, fragment: str) -> None:
    (tmp_path / "file.jsonl").write_text("")
    done = ctxeval("evaluate", RECORDS, "-o", output.format(tmp=tmp_path))
    assert done.returncode == 2, done.stderr
    assert fragment in done.stderr
    assert "-o" in done.stderr
    assert done.stdout == ""


def test_unwritable_output_directory_fails_before_scoring(tmp_path: Path) -> None:
    """A directory the user may not write in: chmod for a user, a read-only tmpfs for root
    (root writes in any directory, but not on a read-only file system)."""
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        try:
            done = ctxeval("evaluate", RECORDS, "-o", locked / "out.jsonl")
        finally:
            locked.chmod(0o700)
        assert done.returncode == 2
        assert f"-o/--output {locked / 'out.jsonl'}: cannot write in {locked}" in done.stderr
        assert done.stdout == ""
        return
    mount = tmp_path / "ro"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=16k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        done = ctxeval("evaluate", RECORDS, "-o", mount / "out.jsonl")
        assert done.returncode == 2
        assert f"-o/--output {mount / 'out.jsonl'}: cannot write in {mount}" in done.stderr
        assert done.stdout == ""
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_misspelt_gate_fails_before_scoring_with_a_suggestion() -> None:
    done = ctxeval(
        "evaluate", RECORDS, "-k", "5", "--fail-under", "context_recal@5=0.8", "--progress"
    )
    assert done.returncode == 2
    assert "--fail-under context_recal@5=0.8" in done.stderr
    assert "did you mean 'context_recall@5'" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # Found by a new user's trial: a gate at a cut-off the run lacks suggested the column
        # without it; a negative gate was accepted (it could never fail).
        ([], "the run is not evaluated at @5; add -k 5"),
        (["-k", "10"], "the run is not evaluated at @5; add -k 5"),
        (["-k", "5", "--fail-under", "ndcg@5=-0.1"], "ndcg is never below 0, so this gate could"),
    ],
)
def test_a_gate_at_a_missing_cut_off_or_below_0_fails_before_scoring(
    args: list[str], message: str
) -> None:
    done = ctxeval("evaluate", RECORDS, "--fail-under", "context_recall@5=0.8", *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("gate", "extra", "code"),
    [
        ("ndcg@10=1.5", [], 2),  # in [0, 1]: could never pass
        ("micro_context_recall@10=1.01", [], 2),
        ("num_ret@10=1.5", ["-m", "num_ret"], 0),  # a count: any threshold can pass
        ("ndcg@10=1", [], 1),  # reachable, failed
    ],
)
def test_a_gate_above_1_on_a_share_fails_before_scoring(
    gate: str, extra: list[str], code: int
) -> None:
    done = ctxeval("evaluate", RECORDS, "-k", "10", *extra, "--fail-under", gate)
    assert done.returncode == code, done.stderr
    if code == 2:
        assert f"--fail-under {gate}: " in done.stderr
        assert "lies between 0 and 1, so this gate could never pass" in done.stderr
        assert done.stdout == ""  # refused before scoring


@pytest.mark.parametrize(
    "args",
    [
        ["-k", "1", "-k", "3"],
        ["-k", "3", "--metrics", "set"],
        ["-m", "ndcg@10", "-m", "P@5", "-m", "context_recall", "-k", "2"],
        [],
    ],
)
def test_predicted_columns_are_the_columns_a_run_produces(args: list[str], tmp_path: Path) -> None:
    from ctxeval.cli.common import prepare_dataset

    output = tmp_path / "result.json"
    done = ctxeval("evaluate", RECORDS, "--format", "json", *args, "-o", output)
    assert done.returncode == 0, done.stderr
    # The result's columns (printed: the measures asked for and their own micro averages).
    produced = list(EvaluationResult.load(output).aggregate)
    printed = list(json.loads(done.stdout)["aggregate"])
    assert printed == [c for c in produced if c.removeprefix("micro_") in produced]
    options = {
        "match": "rouge-chunk",
        "threshold": None,
        "tokenizer": None,
        "metric_set": "set" if "set" in args else "all",
        "convention": None,
        "ks": tuple(int(a) for a, b in zip(args[1:], args, strict=False) if b == "-k"),
        "measures": tuple(a for a, b in zip(args[1:], args, strict=False) if b == "-m"),
        "on_error": "raise",
        "workers": 1,
        "progress": False,
        "mode": None,
    }
    assert prepare_dataset(str(RECORDS), options).columns() == produced


def test_trec_gate_names_are_checked_before_scoring(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 x\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    done = ctxeval("evaluate", "--run", run, "--qrels", qrels, "--fail-under", "ndgc@10=0.5")
    assert done.returncode == 2
    assert "did you mean 'ndcg@10'" in done.stderr
    assert done.stdout == ""


def test_compare_metric_names_are_checked_before_scoring() -> None:
    done = ctxeval(
        "compare", RUNS / "paragraph.jsonl", RUNS / "fixed-100.jsonl", "--metric", "ndgc@10"
    )
    assert done.returncode == 2
    assert "--metric ndgc@10" in done.stderr
    assert "evaluating" not in done.stderr


def test_compare_baseline_name_is_checked_before_scoring() -> None:
    done = ctxeval(
        "compare", RUNS / "paragraph.jsonl", RUNS / "fixed-100.jsonl", "--baseline", "paragraf"
    )
    assert done.returncode == 2
    assert "--baseline: unknown run 'paragraf'; did you mean 'paragraph'?" in done.stderr
    assert "evaluating" not in done.stderr


def test_a_failed_save_prints_the_aggregate_and_names_the_file(tmp_path: Path) -> None:
    """A real 'file too large' (RLIMIT_FSIZE): the write fails with EFBIG half way."""
    output = tmp_path / "out.jsonl"

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))

    done = ctxeval("evaluate", RECORDS, "--format", "json", "-o", output, preexec_fn=small_files)
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout)["summary"]["queries"] == 8  # the aggregate was printed
    assert f"could not write {output}: File too large" in done.stderr
    assert "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []  # no partial file, no temp file


def test_a_failed_write_does_not_hide_a_failed_gate(tmp_path: Path) -> None:
    # Found by a CI user's trial: a report or result that could not be written (exit 2) hid the
    # gate that had failed; the gates are now said before anything is written.
    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))

    runs = [f"base={RUNS / 'fixed-100.jsonl'}", f"new={RUNS / 'paragraph.jsonl'}", "-k", "10"]
    compared = ctxeval(
        "compare", *runs, "--fail-if-worse", "context_recall@10", "--report",
        tmp_path / "r.html", preexec_fn=small_files,
    )  # fmt: skip
    assert compared.returncode == 2, compared.stderr
    assert "gate failed: new is worse than base on context_recall@10" in compared.stderr
    evaluated = ctxeval(
        "evaluate", RUNS / "fixed-100.jsonl", "-k", "5", "--fail-under", "context_recall@5=0.9",
        "-o", tmp_path / "out.jsonl", preexec_fn=small_files,
    )  # fmt: skip
    assert evaluated.returncode == 2, evaluated.stderr
    assert "gate failed: context_recall@5 = 0.8081 < 0.9" in evaluated.stderr
    assert "could not write" in evaluated.stderr


def test_a_full_filesystem(tmp_path: Path) -> None:
    mount = tmp_path / "tiny"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tiny tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        with (mount / "filler").open("wb", buffering=0) as filler:
            try:
                while True:
                    filler.write(b"x" * 1024)
            except OSError:
                pass
        output = mount / "out.jsonl"
        done = ctxeval("evaluate", RECORDS, "--format", "json", "-o", output)
        assert done.returncode == 2, done.stderr
        assert json.loads(done.stdout)["summary"]["queries"] == 8
        assert f"could not write {output}: No space left on device" in done.stderr
        assert sorted(p.name for p in mount.iterdir()) == ["filler"]
    finally:
        subprocess.run(["umount", str(mount)], check=False)


# -- 1. signals during an atomic write leave no temp file ------------------------------------
_SLOW_WRITER = """
import sys, time
from pathlib import Path
from ctxeval.io.atomic import atomic_write
with atomic_write(Path(sys.argv[1])) as out:
    out.write("partial")
    out.flush()
    print("writing", flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, -signal.SIGINT), (signal.SIGTERM, 128 + signal.SIGTERM)]
)
def test_a_signal_during_an_atomic_write_leaves_nothing(
    tmp_path: Path, signum: int, code: int
) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("the previous result\n")
    process = subprocess.Popen(
        [sys.executable, "-c", _SLOW_WRITER, str(target)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "writing\n"
    assert len(_hidden(tmp_path)) == 1  # the temp file exists during the write
    process.send_signal(signum)
    process.communicate(timeout=30)
    assert process.returncode == code
    assert _hidden(tmp_path) == []
    assert target.read_text() == "the previous result\n"


def test_sigkill_during_an_atomic_write_never_leaves_a_partial_target(tmp_path: Path) -> None:
    """Nothing runs after SIGKILL: the hidden temp file may stay, the target is untouched."""
    target = tmp_path / "out.jsonl"
    target.write_text("the previous result\n")
    process = subprocess.Popen(
        [sys.executable, "-c", _SLOW_WRITER, str(target)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "writing\n"
    process.kill()
    process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL
    assert target.read_text() == "the previous result\n"
    leftovers = _hidden(tmp_path)
    assert len(leftovers) <= 1
    assert all(name.startswith(".out.jsonl.") and name.endswith(".tmp") for name in leftovers)


def test_compare_report_needs_an_html_name(tmp_path: Path) -> None:
    done = ctxeval(
        "compare", RUNS / "paragraph.jsonl", RUNS / "fixed-100.jsonl", "--report", tmp_path / "r"
    )
    assert done.returncode == 2
    assert "--report" in done.stderr
    assert "unknown extension" in done.stderr
    assert "evaluating" not in done.stderr


def test_sigterm_during_convert_to_trec_leaves_nothing(tmp_path: Path) -> None:
    """A real convert, terminated while it writes the TREC run (writes slowed down)."""
    data = _jsonl(
        tmp_path / "ids.jsonl",
        [{"id": f"q{i}", "retrieved_ids": ["d1", "d2"], "qrels": {"d1": 1}} for i in range(50)],
    )
    script = """
import contextlib, sys, time
import ctxeval.io.trec as trec
real = trec.atomic_write
@contextlib.contextmanager
def slow(target, **options):
    with real(target, **options) as out:
        class Slow:
            def write(self, text):
                print("writing", flush=True)
                time.sleep(0.2)
                return out.write(text)
        yield Slow()
trec.atomic_write = slow
from ctxeval.cli import main
sys.argv = ["ctxeval", *sys.argv[1:]]
main()
"""
    target = tmp_path / "run.trec"
    process = subprocess.Popen(
        [sys.executable, "-c", script, "convert", str(data), str(target)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "writing\n"
    process.terminate()
    process.communicate(timeout=30)
    assert process.returncode == 128 + signal.SIGTERM
    assert not target.exists()
    assert _hidden(tmp_path) == []


def test_ctrl_c_during_evaluate_output_leaves_nothing(tmp_path: Path) -> None:
    data = tmp_path / "big.jsonl"
    with data.open("w") as out:
        for i in range(3000):
            out.write(json.dumps({"id": f"q{i}", "retrieved_ids": ["a", "b"], "qrels": {"a": 1}}))
            out.write("\n")
    output = tmp_path / "out.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "ctxeval", "evaluate", str(data), "-o", str(output)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    # Finished first, interrupted (130), or, on a loaded machine, interrupted before Python
    # installed its Ctrl-C handler (killed by SIGINT: -2).
    assert process.returncode in (0, 130, -signal.SIGINT)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    if output.exists():
        assert EvaluationResult.load(output).summary["queries"] == 3000


# -- 3. formats that read back what was written -----------------------------------------------
@pytest.mark.parametrize(
    ("record", "fragment"),
    [
        ({"id": "q 1", "retrieved_ids": ["d1"], "qrels": {"d1": 1}}, "the query id 'q 1'"),
        ({"id": "q1", "retrieved_ids": ["d 1"], "qrels": {"d1": 1}}, "the document id 'd 1'"),
        ({"id": "q1", "retrieved_ids": ["d\t1"], "qrels": {"d1": 1}}, "contains whitespace"),
        ({"id": "#q1", "retrieved_ids": ["d1"], "qrels": {"d1": 1}}, "starts with '#'"),
    ],
)
def test_convert_to_trec_refuses_ids_that_would_read_back_different(
    tmp_path: Path, record: dict[str, object], fragment: str
) -> None:
    data = _jsonl(tmp_path / "ids.jsonl", [ID_RECORDS[1], record])
    done = ctxeval("convert", data, tmp_path / "run.trec")
    assert done.returncode == 2, done.stderr
    assert fragment in done.stderr
    assert f"{data}: record[" in done.stderr
    assert not (tmp_path / "run.trec").exists()


def test_convert_to_trec_refuses_grades_that_are_not_whole(tmp_path: Path) -> None:
    data = _jsonl(
        tmp_path / "ids.jsonl",
        [{"id": "q1", "retrieved_ids": ["d1"], "qrels": {"d1": 2.5}}],
    )
    done = ctxeval("convert", data, tmp_path / "run.trec", "--qrels-out", tmp_path / "q.txt")
    assert done.returncode == 2
    assert "record['q1']['d1']: the grade 2.5 is not a whole number" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ids.jsonl"]


def test_convert_to_trec_reads_back_equal(tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "ids.jsonl", ID_RECORDS)
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    done = ctxeval("convert", data, run, "--qrels-out", qrels)
    assert done.returncode == 0, done.stderr
    assert read_trec_qrels(qrels) == {r["id"]: r["qrels"] for r in ID_RECORDS}
    ranked = read_trec_run(run)
    assert {q: sorted(d, key=lambda x: -d[x]) for q, d in ranked.items()} == {
        r["id"]: r["retrieved_ids"] for r in ID_RECORDS
    }


def test_convert_to_parquet_with_mixed_ground_truth_is_refused_clearly(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    data = _jsonl(
        tmp_path / "mixed.jsonl",
        [
            {"id": "a", "retrieved_context": ["x y"], "ground_truth_context": ["x y"]},
            {
                "id": "b",
                "retrieved_context": ["x y"],
                "ground_truth_context": [{"text": "x y", "grade": 2}],
            },
        ],
    )
    done = ctxeval("convert", data, tmp_path / "out.parquet")
    assert done.returncode == 2, done.stderr
    assert "field 'ground_truth_context' is a list of str in record 'a'" in done.stderr
    assert "list of object in record 'b'" in done.stderr
    assert "Traceback" not in done.stderr
    assert "ArrowInvalid" not in done.stderr
    assert not (tmp_path / "out.parquet").exists()


def test_convert_id_mode_to_parquet_reads_back(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    data = _jsonl(tmp_path / "ids.jsonl", ID_RECORDS)
    done = ctxeval("convert", data, tmp_path / "out.parquet")
    assert done.returncode == 0, done.stderr
    back = list(read_records(tmp_path / "out.parquet"))
    assert [(r.id, r.retrieved, r.ground_truth) for r in back] == [  # type: ignore[union-attr]
        (r["id"], r["retrieved_ids"], r["qrels"]) for r in ID_RECORDS
    ]


def test_evaluate_parquet_output_with_metadata_of_mixed_types(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    rows = [dict(row) for row in ID_RECORDS]
    rows[0]["tags"] = ["a", "b"]
    rows[1]["tags"] = "plain"
    data = _jsonl(tmp_path / "ids.jsonl", rows)
    output = tmp_path / "out.parquet"
    done = ctxeval("evaluate", data, "-o", output, "-k", "2")
    assert done.returncode == 0, done.stderr
    back = EvaluationResult.load(output)
    assert [row["tags"] for row in back.per_query] == [["a", "b"], "plain"]


@pytest.mark.parametrize("flag", [None, "--csv-safe", "--raw-csv"])
def test_csv_outputs_neutralise_formulas_unless_raw(tmp_path: Path, flag: str | None) -> None:
    hostile = ['=HYPERLINK("http://x")', "+1", "-2+3", "@SUM(A1)"]
    rows = [
        {**ID_RECORDS[0], "id": hostile[0], "note": hostile[1], "score": -0.5},
        {**ID_RECORDS[1], "id": "q2", "note": hostile[2], "who": hostile[3], "score": 1},
    ]
    data = _jsonl(tmp_path / "ids.jsonl", rows)
    output = tmp_path / "out.csv"
    safe = flag != "--raw-csv"
    flags = [flag] if flag else []
    done = ctxeval("evaluate", data, "-o", output, "-k", "2", *flags)
    assert done.returncode == 0, done.stderr
    converted = tmp_path / "records.csv"
    assert ctxeval("convert", data, converted, *flags).returncode == 0
    for path in (output, converted):
        with path.open(newline="", encoding="utf-8") as handle:
            cells = [cell for row in csv.reader(handle) for cell in row]
        for text in hostile:
            assert (("'" + text) in cells) is safe, (path, text)
            assert (text in cells) is not safe, (path, text)
        assert "-0.5" in cells  # numbers are not text: a negative score is never quoted
        assert not any(cell.startswith("'-0") or cell.startswith("'0") for cell in cells)
    # ctxeval reads its files back as they were: the quotes are taken away
    back = EvaluationResult.load(output)
    assert [(r["id"], r["note"]) for r in back.per_query] == [
        (hostile[0], hostile[1]),
        ("q2", hostile[2]),
    ]
    records = list(read_records(converted))
    assert [(r.id, r.metadata["note"]) for r in records] == [  # type: ignore[union-attr]
        (hostile[0], hostile[1]),
        ("q2", hostile[2]),
    ]


def test_config_can_ask_for_raw_csv(tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "ids.jsonl", [{**ID_RECORDS[0], "id": "-1"}])
    config = tmp_path / "ctxeval.toml"
    config.write_text("[evaluate]\ncsv-safe = false\n")
    output = tmp_path / "out.csv"
    done = ctxeval("evaluate", data, "-o", output, "--config", config)
    assert done.returncode == 0, done.stderr
    assert output.read_text(encoding="utf-8").splitlines()[1].startswith("-1,")


# -- 4. skipped records, stdin, the empty TREC run --------------------------------------------
def _bad(tmp_path: Path) -> Path:
    return _jsonl(
        tmp_path / "bad.jsonl",
        [
            {"id": "x1", "retrieved_context": 3, "ground_truth_context": ["a"]},
            {"id": "x2", "retrieved_context": ["a"], "ground_truth_context": 5},
        ],
    )


def test_every_record_skipped_is_an_error(tmp_path: Path) -> None:
    done = ctxeval("evaluate", _bad(tmp_path), "--on-error", "skip")
    assert done.returncode == 2, done.stderr
    assert "no query was scored: all 2 record(s)" in done.stderr
    assert "(record 'x1')" in done.stderr
    allowed = ctxeval("evaluate", _bad(tmp_path), "--on-error", "skip", "--allow-empty")
    assert allowed.returncode == 0, allowed.stderr
    # The command says it its own way: not also as the Python API's warning.
    assert "warning: no query was scored" not in done.stderr + allowed.stderr


def test_an_empty_dataset_is_an_error_unless_allowed(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = tmp_path / "out.jsonl"
    done = ctxeval("evaluate", empty, "-o", out)
    assert done.returncode == 2
    assert "has no records" in done.stderr
    # Found by a new user's trial: a table of n/a was printed (and the output saved) first.
    assert done.stdout == ""
    assert not out.exists()
    assert ctxeval("evaluate", empty, "--allow-empty").returncode == 0
    config = tmp_path / "ctxeval.toml"
    config.write_text("[evaluate]\nallow-empty = true\ncsv-safe = true\n")
    assert ctxeval("evaluate", empty, "--config", config).returncode == 0


def test_some_records_skipped_on_request_exits_0_and_names_them(tmp_path: Path) -> None:
    data = tmp_path / "some.jsonl"
    data.write_text(
        RECORDS.read_text()
        + json.dumps({"id": "broken", "retrieved_context": 3, "ground_truth_context": ["a"]})
    )
    done = ctxeval("evaluate", data, "--on-error", "skip", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert f"ctxeval: skipped {data}:9 (record 'broken'):" in done.stderr


def test_evaluate_reads_stdin() -> None:
    done = ctxeval("evaluate", "-", "--format", "json", "-k", "3", stdin=RECORDS.read_text())
    assert done.returncode == 0, done.stderr
    from_file = ctxeval("evaluate", RECORDS, "--format", "json", "-k", "3")
    printed, expected = json.loads(done.stdout), json.loads(from_file.stdout)
    assert printed["aggregate"] == expected["aggregate"]
    assert printed["summary"]["source"] == "<stdin>"


def test_errors_on_stdin_name_stdin() -> None:
    # Found by a new user's trial: they named the temporary file stdin was spooled to.
    good = '{"id": "a", "retrieved_context": ["x"], "ground_truth_context": ["x"]}'
    bad = '{"id": "b", "retrieved_context": 5, "ground_truth_context": ["x"]}'
    done = ctxeval("evaluate", "-", stdin=f"{good}\n{bad}\n")
    assert done.returncode == 2
    assert "ctxeval: error: <stdin>:2 (record 'b'): retrieved_context" in done.stderr
    assert "ctxeval-stdin" not in done.stderr
    skipped = ctxeval("evaluate", "-", "--on-error", "skip", stdin=f"{good}\n{bad}\n")
    assert skipped.returncode == 0, skipped.stderr
    assert "skipped <stdin>:2 (record 'b')" in skipped.stderr


def test_an_empty_trec_run_is_named(tmp_path: Path) -> None:
    run = tmp_path / "empty.trec"
    run.write_text("")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    done = ctxeval("evaluate", "--run", run, "--qrels", qrels)
    assert done.returncode == 0, done.stderr
    assert f"the run {run} is empty" in done.stderr


def test_parquet_output_without_pyarrow_fails_before_the_run(tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "ids.jsonl", ID_RECORDS)
    output = tmp_path / "out.parquet"
    script = (
        "import sys; sys.modules['pyarrow'] = None; sys.modules['pyarrow.parquet'] = None; "
        "sys.argv[0] = 'ctxeval'; from ctxeval.cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "evaluate", str(data), "-o", str(output), "-k", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "pip install" in done.stderr
    assert "parquet" in done.stderr
    assert done.stdout == ""  # nothing was scored or printed before the refusal
    assert not output.exists()


def test_a_json_array_on_stdin_is_said_as_such() -> None:
    # Found by a CI user's trial: stdin can't be "named .json", as the message said, and
    # --on-error skip then skipped every line.
    array = json.dumps([json.loads(line) for line in RECORDS.read_text().splitlines()])
    done = ctxeval("evaluate", "-", stdin=array)
    assert done.returncode == 2
    assert "stdin holds a JSON array, and 'evaluate -' reads JSONL (one record a line)" in (
        done.stderr
    )


def test_a_config_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    config = tmp_path / "ctxeval.toml"
    config.write_bytes(b"\xef\xbb\xbfk = [3]\n")
    done = ctxeval("evaluate", RECORDS, "--config", config, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["ks"] == [3]
