"""A data root given explicitly (argument or LITTLEKIT_DATA) is the one used: a file it lacks is an
error naming the root and the file (only the shipped default tables still come from the embedded
default), and a root that is a file or does not exist says so."""

import re

import pytest

from littlekit import config
from littlekit.databuild import corpora


@pytest.fixture(autouse=True)
def no_env(monkeypatch):
    monkeypatch.delenv(config.DATA_ENV, raising=False)


@pytest.fixture
def partial(tmp_path):
    """A data root holding the standards table only."""
    root = tmp_path / "partial"
    (root / "standards").mkdir(parents=True)
    (root / "standards" / "standards.csv").write_text(
        "framework,code,grade,band,subject,text\nCCSS-Math,K.CC.A.1,K,K5,math,Count to 100.\n"
    )
    return root


def test_a_given_root_lacking_a_file_names_the_root_and_the_file(partial):
    with pytest.raises(FileNotFoundError) as missing:
        config.data_path("demo_corpus/demo_web.jsonl", partial)
    message = str(missing.value)
    assert f"data file demo_corpus/demo_web.jsonl is missing under the data root {partial}" in message
    assert "(given as the data root)" in message and str(partial / "demo_corpus/demo_web.jsonl") in message
    assert str(config.EMBEDDED_DATA) not in message  # no hint that it came from elsewhere


def test_littlekit_data_lacking_a_file_is_named_as_such(partial, monkeypatch):
    monkeypatch.setenv(config.DATA_ENV, str(partial))
    where = re.escape(f"under the data root {partial} (from $LITTLEKIT_DATA)")
    with pytest.raises(FileNotFoundError, match=where):
        corpora.load_demo_corpus()  # it used to fall back to the embedded demo corpus silently
    with pytest.raises(FileNotFoundError, match=r"clear/clear\.csv is missing .*littlekit data build"):
        corpora.load_clear()
    assert len(corpora.load_standards()) == 1  # what the root holds is read from it


def test_loaders_with_a_root_argument_do_not_fall_back(partial):
    with pytest.raises(FileNotFoundError, match=r"mathcamps/mathcamps\.jsonl is missing under the data root"):
        corpora.load_mathcamps(partial)
    assert corpora.load_standards(partial)["code"].tolist() == ["K.CC.A.1"]


def test_the_shipped_default_tables_still_come_from_the_embedded_default(partial):
    assert config.data_path("aoa/aoa_lemma.csv", partial) == config.EMBEDDED_DATA / "aoa" / "aoa_lemma.csv"
    assert len(corpora.load_aoa_table(root=partial)) > 30_000
    with pytest.raises(FileNotFoundError, match=r"aoa/kuperman_aoa\.csv is missing"):  # not shipped
        corpora.load_aoa_table(root=partial, table="kuperman")


def test_a_root_file_overrides_the_shipped_table(partial):
    (partial / "aoa").mkdir()
    (partial / "aoa" / "aoa_lemma.csv").write_text("word,aoa\ncat,3.0\n")
    assert config.data_path("aoa/aoa_lemma.csv", partial) == partial / "aoa" / "aoa_lemma.csv"


def test_a_root_that_is_a_file_is_reported_as_such(tmp_path, monkeypatch):
    not_a_folder = tmp_path / "data.csv"
    not_a_folder.write_text("x\n")
    for call in (lambda: config.data_root(not_a_folder), lambda: config.data_path("x.csv", not_a_folder)):
        with pytest.raises(FileNotFoundError, match=re.escape(f"data root {not_a_folder} (given as the data "
                                                              "root) is a file, not a folder")):
            call()
    monkeypatch.setenv(config.DATA_ENV, str(not_a_folder))
    with pytest.raises(FileNotFoundError, match=r"\(from \$LITTLEKIT_DATA\) is a file, not a folder"):
        corpora.load_standards()


def test_a_root_that_does_not_exist_says_so(tmp_path, monkeypatch):
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match=re.escape(f"data root {missing} (given as the data root) "
                                                          "does not exist")):
        config.data_root(missing)
    monkeypatch.setenv(config.DATA_ENV, str(missing))
    with pytest.raises(FileNotFoundError, match=r"\(from \$LITTLEKIT_DATA\) does not exist"):
        config.data_path("standards/standards.csv")


def test_a_folder_where_the_file_should_be(partial):
    (partial / "clear" / "clear.csv").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match=r"clear/clear\.csv is a folder, not a file under the data"):
        config.data_path("clear/clear.csv", partial)


def test_no_root_given_uses_the_embedded_default():
    assert config.data_root() == config.EMBEDDED_DATA
    assert config.data_root("") == config.EMBEDDED_DATA
    if config.IN_CHECKOUT:
        assert config.data_path("standards/standards.csv") == config.EMBEDDED_DATA / "standards/standards.csv"


def test_the_shipped_list_matches_setup_py():
    setup = config.REPO_ROOT / "setup.py"
    if not setup.is_file():
        pytest.skip("needs the source checkout")
    shipped = set(re.findall(r'^\s+"([^"]+)",\s+#', setup.read_text(), re.M))
    assert shipped == set(config.SHIPPED_FILES)


def test_the_chapter_header_says_where_the_data_root_comes_from(partial, tmp_path, monkeypatch, capsys):
    from littlekit.analysis.notebook import setup_chapter

    monkeypatch.setattr(config, "run_dir", lambda name: tmp_path / "runs" / name)  # not the repo's runs/
    chapter = setup_chapter("pytest-root", "judge_report", data_root=partial)
    assert chapter.data_root == partial
    assert f"data root : {partial} (given as the data root)" in capsys.readouterr().out
    with pytest.raises(FileNotFoundError, match="is a file, not a folder"):
        setup_chapter("pytest-root", "judge_report", data_root=partial / "standards" / "standards.csv")
