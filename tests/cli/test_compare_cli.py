"""``ctxeval compare`` through its real entry point: named runs, globs, TREC runs with --qrels,
the --fail-if-worse gate, the default metrics and the collapse of identical columns."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import ctxeval

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "fixtures" / "runs"


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three example runs evaluated at k = 10, each saved as results.jsonl in its folder."""
    root = tmp_path_factory.mktemp("saved")
    paths = {}
    for name in ("fixed-100", "sentence-3", "paragraph"):
        target = root / name / "results.jsonl"
        target.parent.mkdir()
        done = ctxeval("evaluate", RUNS / f"{name}.jsonl", "-k", "10", "-o", target)
        assert done.returncode == 0, done.stderr
        paths[name] = target
    return paths


def _json(*args: str | Path) -> dict:
    done = ctxeval("compare", *args, "--format", "json", "--n-resamples", "2000")
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_named_runs_from_folders_and_baseline_by_name(saved: dict[str, Path]) -> None:
    report = _json(f"new={saved['paragraph']}", f"base={saved['fixed-100']}", "--baseline", "base")
    assert report["runs"] == ["new", "base"]
    assert report["baseline"] == "base"
    # Unnamed, the two files called results.jsonl are told apart by a suffix; --baseline can
    # also repeat a path.
    unnamed = _json(saved["paragraph"], saved["fixed-100"], "--baseline", saved["fixed-100"])
    assert unnamed["runs"] == ["results", "results-2"]
    assert unnamed["baseline"] == "results-2"


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("=x.jsonl", "'=x.jsonl': the run name before '=' is empty; write NAME=PATH"),
        ("new=", "'new=': the path after '=' is empty; write NAME=PATH"),
        ("new=missing.jsonl", "missing.jsonl: does not exist"),
        ("new=nomatch*.jsonl", "nomatch*.jsonl: no file matches the pattern"),
    ],
)
def test_name_path_mistakes(arg: str, message: str, saved: dict[str, Path]) -> None:
    done = ctxeval("compare", f"base={saved['fixed-100']}", arg)
    assert done.returncode == 2
    assert f"ctxeval: error: {message}" in done.stderr
    assert "Traceback" not in done.stderr


def test_duplicate_names_and_unknown_baseline(saved: dict[str, Path]) -> None:
    twice = ctxeval("compare", f"a={saved['fixed-100']}", f"a={saved['paragraph']}")
    assert twice.returncode == 2
    assert "run name 'a' is given twice" in twice.stderr
    unknown = ctxeval(
        "compare", f"a={saved['fixed-100']}", f"b={saved['paragraph']}", "--baseline", "c"
    )
    assert unknown.returncode == 2
    assert "--baseline: unknown run 'c'" in unknown.stderr
    assert "Traceback" not in twice.stderr + unknown.stderr


def test_a_glob_gives_every_file_it_matches(saved: dict[str, Path], tmp_path: Path) -> None:
    for name in ("fixed-100", "paragraph"):
        shutil.copy(saved[name], tmp_path / f"{name}.jsonl")
    report = _json(str(tmp_path / "*.jsonl"))
    assert report["runs"] == ["fixed-100", "paragraph"]
    named = ctxeval("compare", f"x={tmp_path / '*.jsonl'}", saved["sentence-3"])
    assert named.returncode == 2
    assert "matches 2 files and NAME=PATH names one run" in named.stderr


def test_saved_results_are_named_without_their_result_suffix(
    saved: dict[str, Path], tmp_path: Path
) -> None:
    for name in ("fixed-100", "paragraph"):
        shutil.copy(saved[name], tmp_path / f"{name}.result.jsonl")
    (tmp_path / "again").mkdir()
    shutil.copy(saved["paragraph"], tmp_path / "again" / "paragraph.result.jsonl")
    report = _json(str(tmp_path / "*.result.jsonl"), tmp_path / "again" / "paragraph.result.jsonl")
    assert report["runs"] == ["fixed-100", "paragraph", "paragraph-2"]
    named = _json(f"x.result={tmp_path / 'fixed-100.result.jsonl'}", saved["paragraph"])
    assert named["runs"] == ["x.result", "results"]  # a name given is kept as given


def test_default_output_collapses_identical_columns_and_shows_the_signal(
    saved: dict[str, Path],
) -> None:
    done = ctxeval(
        "compare",
        saved["fixed-100"],
        f"sentence={saved['sentence-3']}",
        f"paragraph={saved['paragraph']}",
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "matching rouge-chunk(threshold=0.7); rank convention trec_eval; cut-offs 10" in text
    # The default family: recall and NDCG at the deepest cut-off, 2 metrics x 2 runs.
    assert "Holm-adjusted p < 0.05 over 4 comparisons (2 metrics x 2 runs)" in text
    paragraph = next(line for line in text.splitlines() if line.startswith("context_recall@10"))
    assert paragraph.split()[-2].endswith("*")  # paragraph's recall: significant
    assert paragraph.split()[-1] == "-"  # no run is significantly best of the three
    every = ctxeval("compare", saved["fixed-100"], f"p={saved['paragraph']}", "--metric", "all")
    assert every.returncode == 0, every.stderr
    assert "average_precision@10 = reciprocal_rank@10" in every.stdout
    assert "context_recall@10 = hit_rate@10 = recall@10" in every.stdout
    assert not any(line.startswith("reciprocal_rank@10") for line in every.stdout.splitlines())
    assert "over 6 comparisons (6 metrics x 1 run)" in every.stdout


def test_fail_if_worse_gate_both_ways(saved: dict[str, Path]) -> None:
    base, para = f"base={saved['fixed-100']}", f"para={saved['paragraph']}"
    worse = ctxeval("compare", base, para, "--fail-if-worse", "context_recall@10")
    assert worse.returncode == 1, worse.stderr
    assert (
        "ctxeval: gate failed: para is worse than base on context_recall@10 (diff -0.0909, "
        "Holm-adjusted p 0.0" in worse.stderr
    )
    # The other way round the run is better, not worse: the gate passes.
    better = ctxeval(
        "compare", base, para, "--baseline", "para", "--fail-if-worse", "context_recall@10"
    )
    assert better.returncode == 0, better.stderr
    assert "gate passed: base vs para on context_recall@10: diff +0.0909" in better.stderr
    assert "(significantly better)" in better.stderr
    # Not significant after the correction: passes, and says so.
    sentence = ctxeval(
        "compare",
        base,
        f"s={saved['sentence-3']}",
        "--fail-if-worse",
        "ndcg@10",
    )
    assert sentence.returncode == 0, sentence.stderr
    assert "(not significantly worse)" in sentence.stderr
    unknown = ctxeval("compare", base, para, "--fail-if-worse", "nope@10")
    assert unknown.returncode == 2
    assert "--fail-if-worse nope@10: unknown measure 'nope@10'" in unknown.stderr
    assert "Traceback" not in unknown.stderr


def _trec(tmp_path: Path) -> tuple[Path, Path, Path]:
    qrels = {"q1": {"d2": 1, "d9": 2}, "q2": {"d3": 1, "d4": 2}, "q3": {"d1": 1}}
    runs = {
        "a": {"q1": {"d1": 2.5, "d2": 1.5, "d5": 0.5}, "q2": {"d3": 1.0, "d4": 0.5}},
        "b": {"q1": {"d2": 2.5, "d9": 1.5}, "q2": {"d4": 1.0, "d3": 1.0}, "q3": {"d1": 3.0}},
    }
    (tmp_path / "trec").mkdir()
    paths = []
    for name, run in runs.items():
        path = tmp_path / "trec" / f"{name}.trec"
        path.write_text(
            "".join(
                f"{q} Q0 {d} {i + 1} {s} tag\n"
                for q, docs in run.items()
                for i, (d, s) in enumerate(docs.items())
            ),
            encoding="utf-8",
        )
        paths.append(path)
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()),
        encoding="utf-8",
    )
    return paths[0], paths[1], qrels_path


def test_trec_runs_compare_with_the_numbers_of_evaluate(tmp_path: Path) -> None:
    a, b, qrels = _trec(tmp_path)
    measures = ["map", "ndcg@10", "recall@100"]
    flags = [flag for m in measures for flag in ("--metric", m)]
    report = _json(str(tmp_path / "trec" / "*.trec"), "--qrels", qrels, *flags)
    assert report["runs"] == ["a", "b"]
    for name, path in (("a", a), ("b", b)):
        done = ctxeval(
            "evaluate",
            "--run",
            path,
            "--qrels",
            qrels,
            *[f for m in measures for f in ("-m", m)],
            "--format",
            "json",
        )
        assert done.returncode == 0, done.stderr
        aggregate = json.loads(done.stdout)["aggregate"]
        for row in report["rows"]:
            assert row["means"][name] == aggregate[row["metric"]]  # bit for bit
    assert {row["metric"] for row in report["rows"]} <= set(aggregate)
    text = ctxeval("compare", a, b, "--qrels", qrels, "--n-resamples", "100")
    assert text.returncode == 0, text.stderr
    # TREC's default measures: judged by id, rank measures with trec_eval's options.
    assert "matching by id; rank convention trec_eval; cut-offs 5, 10, 100, all" in text.stdout


def test_a_trec_run_needs_qrels_and_no_dataset_options(tmp_path: Path) -> None:
    a, b, qrels = _trec(tmp_path)
    done = ctxeval("compare", a, b)
    assert done.returncode == 2
    assert f"{a} looks like a TREC run file; give its judgments with --qrels QRELS" in done.stderr
    mixed = ctxeval("compare", a, b, "--qrels", qrels, "--match", "exact-chunk")
    assert mixed.returncode == 2
    assert "--match applies to datasets, not to TREC runs" in mixed.stderr
    assert "Traceback" not in done.stderr + mixed.stderr


def test_the_gate_from_a_config_file(saved: dict[str, Path], tmp_path: Path) -> None:
    config = tmp_path / "ci.toml"
    config.write_text('[compare]\nfail-if-worse = ["context_recall@10"]\n', encoding="utf-8")
    done = ctxeval(
        "compare", f"base={saved['fixed-100']}", f"p={saved['paragraph']}", "--config", config
    )
    assert done.returncode == 1, done.stderr
    assert "gate failed: p is worse than base on context_recall@10" in done.stderr


def test_a_gate_at_a_cut_off_the_runs_lack_says_which_they_have(saved: dict[str, Path]) -> None:
    base, para = f"base={saved['fixed-100']}", f"para={saved['paragraph']}"
    done = ctxeval("compare", base, para, "--fail-if-worse", "ndcg@7")
    assert done.returncode == 2
    assert "--fail-if-worse ndcg@7: the runs have ndcg at 10, not at 7" in done.stderr
    assert "did you mean" not in done.stderr


def test_evaluate_on_a_saved_result_says_what_the_file_is(saved: dict[str, Path]) -> None:
    done = ctxeval("evaluate", saved["paragraph"])
    assert done.returncode == 2
    assert "is a result ctxeval saved, not a dataset" in done.stderr
    assert done.stderr.count("\n") == 1


def test_results_saved_in_every_format_compare_as_jsonl_does(
    saved: dict[str, Path], tmp_path: Path
) -> None:
    # Found by a new user's trial: compare took a saved .csv or .json for a dataset.
    pytest.importorskip("pyarrow")
    paths = {}
    for suffix in (".json", ".csv", ".parquet"):
        target = tmp_path / f"paragraph{suffix}"
        done = ctxeval("evaluate", RUNS / "paragraph.jsonl", "-k", "10", "-o", target)
        assert done.returncode == 0, done.stderr
        paths[suffix] = target
    expected = _json(f"base={saved['fixed-100']}", f"new={saved['paragraph']}")
    for target in paths.values():
        assert _json(f"base={saved['fixed-100']}", f"new={target}") == expected
        done = ctxeval("evaluate", target)
        assert done.returncode == 2
        assert "is a result ctxeval saved, not a dataset" in done.stderr
    # A dataset in JSON (a list of records) is still read as a dataset.
    records = [json.loads(line) for line in (RUNS / "paragraph.jsonl").read_text().splitlines()]
    dataset = tmp_path / "paragraph-dataset.json"
    dataset.write_text(json.dumps(records), encoding="utf-8")
    as_saved = _json(f"base={saved['fixed-100']}", f"new={saved['paragraph']}", "-k", "10")
    as_dataset = _json(f"base={saved['fixed-100']}", f"new={dataset}", "-k", "10")
    assert as_dataset["settings"]["new"]["source"] == str(dataset)  # read as a dataset
    del as_saved["settings"], as_dataset["settings"]  # (the sources differ)
    assert as_dataset == as_saved


def test_k_sets_the_cut_offs_of_trec_runs(tmp_path: Path) -> None:
    a, b, qrels = _trec(tmp_path)
    report = _json(a, b, "--qrels", qrels, "-k", "2")
    # Not recall@100 and ndcg@10 (the default measures' own cut-offs): -k's.
    assert [row["metric"] for row in report["rows"]] == ["recall@2", "ndcg@2"]
    assert report["settings"]["a"]["ks"] == ["2"]
    done = ctxeval(
        "evaluate", "--run", a, "--qrels", qrels, "-m", "recall", "-m", "ndcg", "-k", "2",
        "--format", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    aggregate = json.loads(done.stdout)["aggregate"]
    assert [row["means"]["a"] for row in report["rows"]] == [
        aggregate["recall@2"],
        aggregate["ndcg@2"],
    ]
    named = _json(a, b, "--qrels", qrels, "-k", "2", "-k", "3", "--metric", "ndcg@3")
    assert [row["metric"] for row in named["rows"]] == ["ndcg@3"]
    budget = ctxeval("compare", a, b, "--qrels", qrels, "-k", "300w")
    assert budget.returncode == 2
    assert "ctxeval: error: -k 300w: a context budget counts the retrieved texts" in budget.stderr
    other = ctxeval("compare", a, b, "--qrels", qrels, "-k", "2", "--metric", "ndcg@10")
    assert other.returncode == 2
    assert (
        "ctxeval: error: --metric ndcg@10: the runs have ndcg at 2, not at 10; choose one of "
        "those, or evaluate the runs at it (-k 10)"
    ) in other.stderr


def test_k_sets_the_cut_offs_of_dataset_runs() -> None:
    runs = [RUNS / "fixed-100.jsonl", RUNS / "paragraph.jsonl"]
    report = _json(*runs, "-k", "3")
    assert [row["metric"] for row in report["rows"]] == ["context_recall@3", "ndcg@3"]
    done = ctxeval("compare", *runs, "-k", "3", "-m", "ndcg@10", "-m", "recall")
    assert done.returncode == 2
    assert (
        "ctxeval: error: -m ndcg@10: its cut-off 10 is not one of -k's (3), at which the runs "
        "are compared; write -m ndcg to evaluate it at every -k, or add -k 10"
    ) in done.stderr
    assert "evaluating" not in done.stderr  # refused before any run is scored


def test_k_chooses_among_the_cut_offs_of_saved_results(tmp_path: Path) -> None:
    paths = []
    for match in ("rouge-chunk(tokenizer='unicode')", "exact-chunk"):
        path = tmp_path / f"{match.partition('(')[0]}.result.jsonl"
        args = ["-k", "1", "-k", "3", "--match", match]
        done = ctxeval("evaluate", ROOT / "fixtures" / "records.jsonl", *args, "-o", path)
        assert done.returncode == 0, done.stderr
        paths.append(path)
    deepest = _json(*paths)
    assert [row["metric"] for row in deepest["rows"]] == ["context_recall@3", "ndcg@3"]
    first = _json(*paths, "-k", "1")
    assert [row["metric"] for row in first["rows"]] == ["context_recall@1", "ndcg@1"]
    missing = ctxeval("compare", *paths, "-k", "5")
    assert missing.returncode == 2
    assert (
        "ctxeval: error: -k 5: run 'rouge-chunk' is a saved result, evaluated at 1, 3, and "
        "cannot be evaluated again"
    ) in missing.stderr
    # Options for evaluating mean nothing to results evaluated already: refused, not ignored.
    refused = ctxeval("compare", *paths, "--match", "exact-chunk", "-m", "ndcg")
    assert refused.returncode == 2
    assert (
        "ctxeval: error: --match, -m/--measure apply to the runs ctxeval evaluates (datasets, "
        "TREC runs), and every run here is a saved result, evaluated already"
    ) in refused.stderr


def test_a_metric_the_runs_were_not_evaluated_with_says_how_to_add_it(
    saved: dict[str, Path], tmp_path: Path
) -> None:
    runs = [RUNS / "fixed-100.jsonl", RUNS / "paragraph.jsonl"]
    dataset = ctxeval("compare", *runs, "-k", "10", "--metric", "span_iou")
    assert dataset.returncode == 2
    assert (
        "ctxeval: error: --metric span_iou: the runs were not evaluated with span_iou (their "
        "measures: context_precision, context_recall, context_f1, average_precision, "
        "reciprocal_rank, ndcg, hit_rate, precision, recall); add -m span_iou to evaluate it"
    ) in dataset.stderr
    assert "--corpus DIR" in dataset.stderr
    asked = ctxeval("compare", *runs, "-k", "10", "-m", "context_recall", "--metric", "ndcg")
    assert asked.returncode == 2
    assert (
        "--metric ndcg: the runs were not evaluated with ndcg (their measures: context_recall); "
        "add -m ndcg to evaluate it\n"
    ) in asked.stderr
    results = ctxeval("compare", saved["fixed-100"], saved["paragraph"], "--metric", "span_iou")
    assert results.returncode == 2
    assert "evaluate the datasets again with it (ctxeval evaluate DATASET -m span_iou" in (
        results.stderr
    )
    a, b, qrels = _trec(tmp_path)
    trec = ctxeval("compare", a, b, "--qrels", qrels, "--metric", "span_iou")
    assert trec.returncode == 2
    assert "--metric span_iou: span measures need the texts" in trec.stderr
    micro = ctxeval(
        "compare", saved["fixed-100"], saved["paragraph"], "--metric", "micro_context_recall@10"
    )
    assert micro.returncode == 2
    assert "a micro average has no per-query values to pair; compare context_recall@10" in (
        micro.stderr
    )
    typo = ctxeval("compare", saved["fixed-100"], saved["paragraph"], "--metric", "ndgc@10")
    assert typo.returncode == 2
    assert "did you mean 'ndcg@10'" in typo.stderr
    option = ctxeval(
        "compare", saved["fixed-100"], saved["paragraph"], "--metric", "ndcg(gian=1)@10"
    )
    assert option.returncode == 2
    assert (
        "ctxeval: error: --metric ndcg(gian=1)@10: unknown ndcg option 'gian'; did you mean 'gain'?"
    ) in option.stderr
    for done in (dataset, asked, results, trec, micro, typo, option):
        assert done.stderr.count("ctxeval: error:") == 1
        assert "evaluating" not in done.stderr


def test_the_header_says_how_the_compared_metrics_were_judged(
    saved: dict[str, Path], tmp_path: Path
) -> None:
    runs = [RUNS / "fixed-100.jsonl", RUNS / "paragraph.jsonl"]
    corpus = ROOT / "fixtures" / "corpus"
    spans = ctxeval(
        "compare", *runs, "-m", "span_iou@10", "-m", "span_recall@10", "--corpus", corpus,
        "--n-resamples", "200", "--report", tmp_path / "spans.html",
    )  # fmt: skip
    assert spans.returncode == 0, spans.stderr
    assert spans.stdout.splitlines()[1] == "spans located in the corpus; cut-offs 10"
    page = (tmp_path / "spans.html").read_text(encoding="utf-8")
    runs_table = page[page.index('class="runs"') :].split("</table>")[0]
    assert runs_table.count("<td>spans located in the corpus</td>") == 2
    assert "n/a" not in runs_table
    assert "by id" not in runs_table
    both = ctxeval(
        "compare", *runs, "-m", "span_iou@10", "-m", "context_recall@10", "-m", "ndcg@10",
        "--corpus", corpus, "--metric", "all", "--n-resamples", "200",
    )  # fmt: skip
    assert both.returncode == 0, both.stderr
    assert both.stdout.splitlines()[1] == (
        "matching rouge-chunk(threshold=0.7); spans located in the corpus; rank convention "
        "trec_eval; cut-offs 10"
    )
    # -m names rank measures: their convention is read from their specs.
    exponential = ctxeval(
        "compare", *runs, "-m", "ndcg(gain='exponential')@10", "-m", "recall@10",
        "--n-resamples", "200",
    )  # fmt: skip
    assert exponential.returncode == 0, exponential.stderr
    assert exponential.stdout.splitlines()[1] == (
        "matching rouge-chunk(threshold=0.7); rank convention custom (gain='exponential'); "
        "cut-offs 10"
    )


def test_no_convention_n_a_for_a_run_without_rank_metrics(
    saved: dict[str, Path], tmp_path: Path
) -> None:
    set_only = tmp_path / "set.result.jsonl"
    done = ctxeval(
        "evaluate", RUNS / "fixed-100.jsonl", "-k", "10", "--metrics", "set", "-o", set_only
    )
    assert done.returncode == 0, done.stderr
    report = tmp_path / "report.html"
    compared = ctxeval(
        "compare", set_only, saved["paragraph"], "--n-resamples", "200", "--report", report
    )
    assert compared.returncode == 0, compared.stderr
    # context_recall@10 is compared: a set measure, which no rank convention concerns.
    assert compared.stdout.splitlines()[1] == "matching rouge-chunk(threshold=0.7); cut-offs 10"
    assert "n/a" not in compared.stdout
    page = report.read_text(encoding="utf-8")
    runs_table = page[page.index('class="runs"') :].split("</table>")[0]
    assert "n/a" not in runs_table
    assert runs_table.count("<td>rouge-chunk(threshold=0.7)</td>") == 2
    assert "<td>trec_eval</td>" in runs_table  # the run that has rank metrics says which
    exact = ctxeval(
        "compare", RUNS / "fixed-100.jsonl", RUNS / "paragraph.jsonl", "--match", "exact-chunk",
        "-k", "10", "--n-resamples", "200", "--report", tmp_path / "exact.html",
    )  # fmt: skip
    assert exact.returncode == 0, exact.stderr
    page = (tmp_path / "exact.html").read_text(encoding="utf-8")
    runs_table = page[page.index('class="runs"') :].split("</table>")[0]
    assert "n/a" not in runs_table  # exact-chunk has no threshold: the cell is blank


def test_a_cut_off_the_runs_lack_is_named_and_a_bad_one_is_refused() -> None:
    runs = [RUNS / "fixed-100.jsonl", RUNS / "paragraph.jsonl"]
    done = ctxeval("compare", *runs, "--metric", "context_recall@7")
    assert done.returncode == 2
    assert "the runs have context_recall at no cut-off (the whole list), not at 7" in done.stderr
    assert "choose context_recall, or" in done.stderr
    done = ctxeval("compare", *runs, "--fail-if-worse", "ndcg@99x")
    assert done.returncode == 2
    assert "--fail-if-worse ndcg@99x: '99x': unknown budget unit 'x'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_trec_run_given_to_convert_points_to_convert_with_qrels(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 mine\n")
    done = ctxeval("convert", run, tmp_path / "out.jsonl")
    assert done.returncode == 2
    assert "ctxeval convert RUN OUT.jsonl --qrels QRELS" in done.stderr


def test_a_note_about_sentence_matching_is_printed_once_for_all_runs() -> None:
    done = ctxeval(
        "compare", RUNS / "fixed-100.jsonl", RUNS / "paragraph.jsonl", "--match", "rouge-sentence"
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("only the set metrics are shown") == 1


def test_trec_runs_are_compared_at_the_relevance_level_and_depth_evaluate_uses(
    tmp_path: Path,
) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 2\nq2 0 d3 2\nq3 0 d4 1\n")
    runs = []
    for name, lines in (
        ("a", "q1 Q0 d1 1 3 a\nq1 Q0 d2 2 2 a\nq2 Q0 d9 1 3 a\nq2 Q0 d3 2 2 a\n"),
        ("b", "q1 Q0 d2 1 3 b\nq1 Q0 d1 2 2 b\nq2 Q0 d3 1 3 b\n"),
    ):
        path = tmp_path / f"{name}.trec"
        path.write_text(lines)
        runs.append(path)
    for flags in (["-l", "2"], ["-M", "1"], ["--skip-missing"]):
        done = ctxeval(
            "compare", *runs, "--qrels", qrels, "--metric", "map", "--format", "json", *flags
        )
        assert done.returncode == 0, done.stderr
        means = json.loads(done.stdout)["rows"][0]["means"]
        for run, name in zip(runs, ("a", "b"), strict=True):
            alone = ctxeval(
                "evaluate", "--run", run, "--qrels", qrels, "-m", "map", "--format", "json",
                *flags,
            )  # fmt: skip
            assert alone.returncode == 0, alone.stderr
            assert means[name] == json.loads(alone.stdout)["aggregate"]["average_precision"]
    done = ctxeval("compare", RUNS / "fixed-100.jsonl", RUNS / "paragraph.jsonl", "-M", "3")
    assert done.returncode == 2
    assert "-M/--max-retrieved: for TREC runs judged against --qrels" in done.stderr


def test_evaluate_and_compare_put_the_default_trec_measures_at_the_k_asked_for(
    tmp_path: Path,
) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 1\nq2 0 d3 1\n")
    run = tmp_path / "a.trec"
    run.write_text("q1 Q0 d9 1 3 a\nq1 Q0 d2 2 2 a\nq2 Q0 d3 1 3 a\n")
    done = ctxeval("evaluate", "--run", run, "--qrels", qrels, "-k", "2", "--format", "json")
    assert done.returncode == 0, done.stderr
    aggregate = json.loads(done.stdout)["aggregate"]
    assert {"ndcg@2", "precision@2", "recall@2"} <= set(aggregate)
    assert not {"ndcg@10", "precision@5", "recall@100"} & set(aggregate)
    other = tmp_path / "b.trec"
    other.write_text("q1 Q0 d1 1 3 b\nq2 Q0 d3 1 3 b\n")
    compared = ctxeval("compare", run, other, "--qrels", qrels, "-k", "2", "--format", "json")
    assert compared.returncode == 0, compared.stderr
    rows = {row["metric"]: row["means"] for row in json.loads(compared.stdout)["rows"]}
    assert rows["ndcg@2"]["a"] == aggregate["ndcg@2"]


def test_runs_on_different_queries_name_the_align_flag(tmp_path: Path) -> None:
    # A run missing a query: compared on the shared queries with a warning naming --align error;
    # with --align error, an error naming --align intersection (never a Python argument).
    lines = (RUNS / "fixed-100.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    short = tmp_path / "short.jsonl"
    short.write_text("".join(lines[1:]), encoding="utf-8")
    args = ("compare", RUNS / "fixed-100.jsonl", short, "-k", "5", "--n-resamples", "100")
    warned = ctxeval(*args)
    assert warned.returncode == 0, warned.stderr
    assert "do not cover the same queries" in warned.stderr
    assert "--align error" in warned.stderr
    assert "align=" not in warned.stderr
    stopped = ctxeval(*args, "--align", "error")
    assert stopped.returncode == 2
    assert "--align intersection" in stopped.stderr
    assert "align=" not in stopped.stderr
    assert "Traceback" not in stopped.stderr


def test_a_dataset_run_that_scores_nothing_is_named_in_flags(tmp_path: Path) -> None:
    # Found by a user's trial: an empty dataset got the Python API's message
    # ("compare(): ... keep_per_query=False ... run(output='run.jsonl')").
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    done = ctxeval("compare", f"x={RUNS / 'paragraph.jsonl'}", f"y={empty}")
    assert done.returncode == 2
    assert f"error: run 'y': {empty} has no records; leave the run out of the comparison" in (
        done.stderr
    )
    assert "keep_per_query" not in done.stderr
    # Every record skipped: the run is evaluated, and the Python API's warning is not repeated
    # beside the command's error.
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "retrieved_context": 3, "ground_truth_context": ["x"]}\n')
    skipped = ctxeval("compare", f"x={RUNS / 'paragraph.jsonl'}", f"y={bad}", "--on-error", "skip")
    assert skipped.returncode == 2
    assert "error: run 'y': no query was scored: all 1 record(s) of" in skipped.stderr
    assert "warning: no query was scored" not in skipped.stderr


def test_the_same_file_twice_is_warned_of() -> None:
    # Found by a user's trial: `compare a.jsonl a.jsonl` compared a run with itself unwarned.
    done = ctxeval("compare", RUNS / "paragraph.jsonl", RUNS / "paragraph.jsonl", "-k", "5")
    assert done.returncode == 0, done.stderr
    assert "warning: runs 'paragraph' and 'paragraph-2' are the same file" in done.stderr
    other = ctxeval("compare", RUNS / "paragraph.jsonl", RUNS / "fixed-100.jsonl", "-k", "5")
    assert "are the same file" not in other.stderr


def test_a_saved_result_that_scored_nothing_is_named(tmp_path: Path) -> None:
    # Found by a CI user's trial: a result saved with --allow-empty got the Python API's
    # "keep_per_query=False ... run(output=...)" message.
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    saved = tmp_path / "nothing.jsonl"
    made = ctxeval("evaluate", empty, "--allow-empty", "-k", "5", "-o", saved)
    assert made.returncode == 0, made.stderr
    done = ctxeval("compare", f"base={RUNS / 'paragraph.jsonl'}", f"new={saved}", "-k", "5")
    assert done.returncode == 2
    assert f"run 'new': {empty} has no records; nothing was scored (leave the run out" in (
        done.stderr
    )


def test_a_gate_fails_a_run_that_lacks_queries_unless_align_is_given(tmp_path: Path) -> None:
    # Found by a CI user's trial: a run that answered 50 of 99 queries passed --fail-if-worse,
    # tested on the 50 it shared with the baseline.
    half = tmp_path / "half.jsonl"
    half.write_text("".join((RUNS / "paragraph.jsonl").read_text().splitlines(True)[:50]))
    runs = [f"base={RUNS / 'fixed-100.jsonl'}", f"new={half}", "-k", "10"]
    gated = ctxeval("compare", *runs, "--fail-if-worse", "context_recall@10")
    assert gated.returncode == 1, gated.stderr
    assert "gate failed: new lacks 49 of the queries the other runs have ('q051'" in gated.stderr
    assert "pass --align intersection to gate on the queries every run has" in gated.stderr
    shared = ctxeval(
        "compare", *runs, "--fail-if-worse", "context_recall@10", "--align", "intersection"
    )
    assert shared.returncode == 0, shared.stderr
    assert "lacks 49 of the queries" not in shared.stderr
    ungated = ctxeval("compare", *runs)
    assert ungated.returncode == 0, ungated.stderr


def test_runs_judged_differently_are_warned_of_on_stderr(tmp_path: Path) -> None:
    # Found by a CI user's trial: a baseline at --threshold 0.3 gated a run at 0.7, and only
    # the report's second line (on stdout, not in --format json) said so.
    base = tmp_path / "base.jsonl"
    made = ctxeval(
        "evaluate", RUNS / "fixed-100.jsonl", "-k", "10", "--threshold", "0.3", "-o", base
    )
    assert made.returncode == 0, made.stderr
    done = ctxeval(
        "compare", f"base={base}", f"new={RUNS / 'fixed-100.jsonl'}", "-k", "10", "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    assert (
        "warning: the runs were not judged alike (matching base: rouge-chunk(threshold=0.3); "
        "new: rouge-chunk(threshold=0.7))" in done.stderr
    )
    json.loads(done.stdout)  # stdout stays the JSON


def test_gates_are_in_the_json_and_markdown() -> None:
    # Found by a CI user's trial: a bot reading --format json saw no gate outcome.
    runs = [f"base={RUNS / 'fixed-100.jsonl'}", f"new={RUNS / 'paragraph.jsonl'}", "-k", "10"]
    gate = ["--fail-if-worse", "context_recall@10"]
    shown = ctxeval("compare", *runs, *gate, "--format", "json")
    assert shown.returncode == 1
    (outcome,) = json.loads(shown.stdout)["gates"]
    assert outcome["run"] == "new"
    assert outcome["metric"] == "context_recall@10"
    assert outcome["passed"] is False
    assert outcome["message"].startswith("new is worse than base on context_recall@10 (diff")
    assert "gates" not in json.loads(ctxeval("compare", *runs, "--format", "json").stdout)
    markdown = ctxeval("compare", *runs, *gate, "--format", "markdown")
    assert "\n- gate failed: new is worse than base on context_recall@10" in markdown.stdout


def test_a_result_csv_without_its_summary_file_is_named(tmp_path: Path) -> None:
    # Found by a CI user's trial: only the CSV artifact was uploaded, and the error spoke of a
    # dataset's missing ground-truth field.
    saved = tmp_path / "base.csv"
    made = ctxeval("evaluate", RUNS / "fixed-100.jsonl", "-k", "5", "-o", saved)
    assert made.returncode == 0, made.stderr
    (tmp_path / "base.summary.json").unlink()
    done = ctxeval("compare", f"base={saved}", f"new={RUNS / 'paragraph.jsonl'}", "-k", "5")
    assert done.returncode == 2
    assert "the columns are a saved result's ('context_precision@5'" in done.stderr
    assert "in base.summary.json beside it, which is missing or damaged" in done.stderr
    # A whole-list result's columns have no @ (found by a review).
    whole = tmp_path / "whole.csv"
    assert ctxeval("evaluate", RUNS / "fixed-100.jsonl", "-o", whole).returncode == 0
    (tmp_path / "whole.summary.json").unlink()
    done = ctxeval("compare", f"base={whole}", f"new={RUNS / 'paragraph.jsonl'}")
    assert "the columns are a saved result's ('context_precision', 'context_recall'" in done.stderr


def test_trec_runs_compare_at_k_all(tmp_path: Path) -> None:
    # Found by a review: -k all (the whole list) was taken for a budget with --qrels.
    _trec(tmp_path)
    report = _json(
        str(tmp_path / "trec" / "*.trec"), "--qrels", tmp_path / "qrels.txt", "-k", "all",
        "-k", "1", "--metric", "ndcg",
    )  # fmt: skip
    assert report["metrics"] == ["ndcg"]
