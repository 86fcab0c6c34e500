"""Errors as Python exceptions: ScenarioError with its position, ValueError for arguments,
MemoryError for a run over the memory limit, the CLI's messages."""

import subprocess

import pytest
import retrystorm

from conftest import SCENARIOS

MM1 = SCENARIOS / "mm1.toml"


def cli_message(cli_binary, *args):
    done = subprocess.run([str(cli_binary), *args], capture_output=True, text=True)
    assert done.returncode == 2, done
    return done.stderr.strip()


def test_a_bad_field_in_toml_text_names_line_column_and_field():
    text = MM1.read_text().replace('horizon = "', 'horizon = "x', 1)
    assert text != MM1.read_text()
    with pytest.raises(retrystorm.ScenarioError) as e:
        retrystorm.run(text)
    err = e.value
    assert err.path == "<string>"
    assert err.field == "horizon"
    assert isinstance(err.line, int) and err.line > 0 and isinstance(err.column, int) and err.column > 0
    line = text.splitlines()[err.line - 1]
    assert line.lstrip().startswith("horizon"), line
    assert err.message and err.message in str(err)
    assert isinstance(err, ValueError)


def test_a_bad_set_value_is_the_clis_message(cli_binary, tmp_path):
    with pytest.raises(retrystorm.ScenarioError) as e:
        retrystorm.run(MM1, set={"hop.server.workers": 0})
    message = cli_message(cli_binary, "run", str(MM1), "--set", "hop.server.workers=0", "--out", str(tmp_path / "o"))
    assert message.endswith(str(e.value)), (message, str(e.value))
    assert e.value.field is not None and "workers" in e.value.field


def test_a_missing_file_is_a_scenario_error_naming_it():
    with pytest.raises(retrystorm.ScenarioError) as e:
        retrystorm.run("no/such/scenario.toml")
    assert e.value.path == "no/such/scenario.toml"
    assert "cannot read the scenario file" in str(e.value)


@pytest.mark.parametrize(
    "kwargs,words",
    [
        ({"threads": 0}, "--threads 0"),
        ({"seed": -1}, "negative"),
        ({"replications": -3}, "negative"),
        ({"replications": 2.5}, "whole number"),
        ({"set": ["hop.server.workers=2"]}, "set= takes a dict"),
        ({"set": {"hop..workers": 2}}, "empty segment"),
        ({"max_memory": "lots"}, "max_memory"),
    ],
)
def test_bad_arguments_are_value_errors(kwargs, words):
    with pytest.raises(ValueError) as e:
        retrystorm.run(MM1, **kwargs)
    assert not isinstance(e.value, retrystorm.ScenarioError)
    assert words in str(e.value)


def test_an_unknown_jitter_and_baseline_are_refused():
    with pytest.raises(retrystorm.ScenarioError):
        retrystorm.compare(MM1, jitter=["nonesuch"])
    with pytest.raises(ValueError, match="--baseline nope: no variant has that name"):
        retrystorm.compare(MM1, jitter="none,full", baseline="nope")
    with pytest.raises(ValueError, match="given twice"):
        retrystorm.compare(MM1, jitter=["full", "full"])


def test_a_run_over_the_memory_limit_is_refused_with_the_clis_message(cli_binary, tmp_path):
    with pytest.raises(MemoryError) as e:
        retrystorm.run(MM1, max_memory="1KiB")
    message = cli_message(cli_binary, "run", str(MM1), "--max-memory", "1KiB", "--out", str(tmp_path / "o"))
    assert str(e.value) in message and len(str(e.value)) > 20


def test_a_scenario_of_another_type_is_a_type_error():
    with pytest.raises(TypeError, match="scenario must be"):
        retrystorm.run(42)
