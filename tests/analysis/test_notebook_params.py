import pytest

from littlekit.analysis import params as p


def test_positive_int_accepts_and_normalises():
    assert p.check_positive_int("sample_size", 50) == 50
    assert p.check_positive_int("sample_size", 3.0) == 3


@pytest.mark.parametrize("bad", [0, -1, 2.5, "10", True, None])
def test_positive_int_refuses_with_the_parameter_name(bad):
    with pytest.raises(p.ParameterError, match="parameter sample_size must be a positive integer"):
        p.check_positive_int("sample_size", bad)


def test_fraction_and_number_bounds():
    assert p.check_fraction("max_oov", 0.05) == 0.05
    assert p.check_number("max_aoa", 12, 0, 30) == 12.0
    for bad in [-0.1, 1.5, float("nan"), "0.1"]:
        with pytest.raises(p.ParameterError, match="max_oov"):
            p.check_fraction("max_oov", bad)


def test_run_name_is_one_folder():
    assert p.check_run_name("run_name", "default-2.b") == "default-2.b"
    for bad in ["", "../up", "a/b", ".hidden", 3]:
        with pytest.raises(p.ParameterError, match="run_name"):
            p.check_run_name("run_name", bad)


def test_path_none_existing_and_missing(tmp_path):
    assert p.check_path("data_root", None) is None
    assert p.check_path("data_root", str(tmp_path)) == tmp_path
    with pytest.raises(p.ParameterError, match="does not exist"):
        p.check_path("data_root", tmp_path / "missing")
    with pytest.raises(p.ParameterError, match="a path"):
        p.check_path("data_root", None, allow_none=False)


def test_int_and_choice():
    assert p.check_int("seed", -3) == -3
    with pytest.raises(p.ParameterError, match="seed"):
        p.check_int("seed", 1.5)
    assert p.check_choice("impute", "fitted", {"published", "fitted", "none"}) == "fitted"
    with pytest.raises(p.ParameterError, match="one of"):
        p.check_choice("impute", "zipf", {"published", "fitted", "none"})


def test_url():
    assert p.check_url("judge_base_url", None) is None
    assert p.check_url("judge_base_url", "http://127.0.0.1:8000/v1/") == "http://127.0.0.1:8000/v1"
    for bad in ("localhost:8000", "ftp://host", "", 3):
        with pytest.raises(p.ParameterError, match="judge_base_url must be an http"):
            p.check_url("judge_base_url", bad)
    with pytest.raises(p.ParameterError):
        p.check_url("judge_base_url", None, allow_none=False)


def test_path_suffixes(tmp_path):
    table = tmp_path / "clues.TSV"
    table.write_text("x\n")
    assert p.check_path("jeopardy_path", table, suffixes=(".tsv", ".json", ".csv")) == table
    with pytest.raises(p.ParameterError, match=r"must be a \.csv, \.json or \.tsv file"):
        p.check_path("jeopardy_path", tmp_path / "clues.txt", suffixes=(".tsv", ".json", ".csv"))


def test_env_name_never_repeats_the_value():
    assert p.check_env_name("judge_api_key_env", "OPENAI_API_KEY") == "OPENAI_API_KEY"
    for bad in ("sk-secret-123", "", None, "1ABC"):
        with pytest.raises(p.ParameterError, match="name of an environment variable") as failure:
            p.check_env_name("judge_api_key_env", bad)
        assert "sk-secret" not in str(failure.value)


def test_text_and_models():
    assert p.check_text("device", "cuda:0") == "cuda:0"
    with pytest.raises(p.ParameterError, match="non-empty string"):
        p.check_text("device", " ")
    assert p.check_models("models", {"LittleLearner": "runs/x/best"}) == {"LittleLearner": "runs/x/best"}
    for bad in ({}, {"a": ""}, ["a"], {"a": 3}):
        with pytest.raises(p.ParameterError, match="parameter models must be a non-empty dict"):
            p.check_models("models", bad)


def test_check_stores_normalised_values_and_names_unknown_parameters():
    namespace = {"sample_size": 3.0, "limit": None, "flag": True, "share": 0.5}
    p.check(
        namespace,
        sample_size=p.check_positive_int,
        limit=p.optional(p.check_positive_int),
        flag=p.boolean,
        share=p.number(0, 1),
    )
    assert namespace == {"sample_size": 3, "limit": None, "flag": True, "share": 0.5}
    with pytest.raises(p.ParameterError, match="does not define it"):
        p.check(namespace, missing=p.check_int)
    with pytest.raises(p.ParameterError, match="parameter flag must be one of"):
        p.check({"flag": "yes"}, flag=p.boolean)


def test_subset_of_takes_distinct_known_values_and_names_the_parameter():
    methods = p.subset_of("boundary", "random", "error")
    assert methods("methods", ("random", "boundary")) == ["random", "boundary"]
    for bad in ([], ["boundary", "boundary"], ["greedy"], "boundary"):
        with pytest.raises(p.ParameterError, match="parameter methods must be a non-empty list"):
            methods("methods", bad)


def test_numbers_takes_a_list_of_numbers_in_range_and_names_the_parameter():
    sweep = p.numbers(0, 30)
    assert sweep("thresholds", [10, 12.5]) == [10.0, 12.5]
    for bad in ([], [10, 31], [True], "12", [float("nan")]):
        with pytest.raises(
            p.ParameterError, match=r"parameter thresholds must be a non-empty list of numbers"
        ):
            sweep("thresholds", bad)


def test_units_take_a_band_all_or_known_unit_ids_and_name_the_parameter():
    assert p.check_units("units", "all") == "all"
    assert p.check_units("units", ("count_on", "negative_results")) == ["count_on", "negative_results"]
    assert p.check_units("units", "count_on, negative_results") == "count_on, negative_results"
    for bad in ([], "", 3, [3], "BEYOND", "K5", ["count_on", "add_sub_within_10"]):  # one band: no verdicts
        with pytest.raises(p.ParameterError, match="must be 'all' or curriculum unit ids of both bands"):
            p.check_units("units", bad)
    unknown = r"parameter units: unknown unit\(s\) counting_on; known units: count_on"
    with pytest.raises(p.ParameterError, match=unknown):
        p.check_units("units", ["count_on", "counting_on"])


def test_label_set_takes_named_sets_and_existing_files(tmp_path):
    labels = tmp_path / "mine.jsonl"
    labels.write_text("{}\n")
    for good in ["judge", "source", "judge, source", f"judge,{labels}"]:
        assert p.check_label_set("labels_set", good) == good
    with pytest.raises(p.ParameterError, match=r"labels_set: 'nothing\.jsonl' is neither a label set"):
        p.check_label_set("labels_set", "judge,nothing.jsonl")
    for bad in ["", " , ", None, ["judge"]]:
        must = "parameter labels_set must be 'judge' or 'rewrites' or 'source'"
        with pytest.raises(p.ParameterError, match=must):
            p.check_label_set("labels_set", bad)


def test_check_takes_the_parameters_and_their_checkers_from_the_annotations():
    namespace = {}
    exec(
        "from littlekit.analysis import params\n"
        "sample_size: params.check_positive_int = 3.0\n"
        "limit: params.optional(params.check_positive_int) = None\n",
        namespace,
    )
    namespace["sample_size"] = 4.0  # a value injected after the parameters cell, as papermill does
    p.check(namespace)
    assert (namespace["sample_size"], namespace["limit"]) == (4, None)
    namespace["limit"] = 0
    with pytest.raises(p.ParameterError, match="parameter limit must be a positive integer, got 0"):
        p.check(namespace)
    namespace["limit"], namespace["sampel_size"] = None, 5
    with pytest.raises(p.ParameterError, match=r"unknown parameter sampel_size \(did you mean sample_size"):
        p.check(namespace)


def test_a_parameter_declares_its_checker_once_and_an_annotation_must_be_a_checker():
    with pytest.raises(TypeError, match="parameters seed have a checker in the parameters cell and in check"):
        p.check({"__annotations__": {"seed": p.check_int}, "seed": 0}, seed=p.check_int)
    with pytest.raises(TypeError, match="parameter seed: its annotation 'int' is not a checker"):
        p.check({"__annotations__": {"seed": "int"}, "seed": 0})
