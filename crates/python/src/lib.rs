//! `retrystorm._native`: the Python package's compiled half (PyO3). It turns keyword arguments
//! into the CLI's own flags ([`retrystorm::cli::study_job`]), simulates with the GIL released
//! while a watcher polls Ctrl-C and reports progress, and hands the results over as tables.

mod arrow;
mod table;

use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList};
use retrystorm::cli::{self, JobError, ScenarioInput, StudyFlags};
use retrystorm::report::summary::Summary;
use retrystorm::runner::{Counts, Study};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use table::{Columns, Series};

pyo3::create_exception!(
    _native,
    ScenarioError,
    PyValueError,
    "A scenario (or a `set=` value) that is invalid: `path`, `line`, `column` and `field` say where, the message what to fix."
);

/// The Python exception for a [`ScenarioError`], its position as attributes.
fn scenario_error(py: Python<'_>, e: &retrystorm::scenario::ScenarioError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let value = err.value(py);
    let (line, column) = match e.location {
        Some((l, c)) => (Some(l), Some(c)),
        None => (None, None),
    };
    let set = || -> PyResult<()> {
        value.setattr("path", &e.file)?;
        value.setattr("line", line)?;
        value.setattr("column", column)?;
        value.setattr("field", e.field.clone())?;
        value.setattr("message", &e.message)?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// A refusal before anything runs, as the Python exception for it.
fn job_error(py: Python<'_>, e: JobError) -> PyErr {
    match e {
        JobError::Scenario(e) => scenario_error(py, &e),
        JobError::BadInput(m) => PyValueError::new_err(m),
        JobError::Memory(m) => PyMemoryError::new_err(m),
    }
}

/// The text of a panic's payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs `work` on a thread of its own with the GIL released; meanwhile this thread polls
/// Python's signals (Ctrl-C sets the runs' stop flag and raises `KeyboardInterrupt` once the work
/// has stopped) and calls `progress(done, total)` about five times a second. A panic is a
/// `RuntimeError` naming it a bug, with `repro` (what reproduces it: the seed, the command).
fn watched<T: Send>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    repro: &str,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(Counts::default());
    let report = |py: Python<'_>| -> PyResult<()> {
        if let Some(p) = &progress {
            p.call1(py, (counts.done.load(Ordering::Relaxed), counts.total.load(Ordering::Relaxed)))?;
        }
        Ok(())
    };
    let (outcome, interrupted) = py.detach(|| {
        std::thread::scope(|scope| {
            let (flag, observed) = (stop.clone(), counts.clone());
            let worker = scope.spawn(move || {
                retrystorm::model::sim::set_stop_flag(Some(flag));
                let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    retrystorm::runner::watch(observed, work)
                }));
                retrystorm::model::sim::set_stop_flag(None);
                out
            });
            let mut interrupted: Option<PyErr> = None;
            let mut tick = 0u32;
            while !worker.is_finished() {
                std::thread::sleep(Duration::from_millis(20));
                tick += 1;
                if interrupted.is_some() {
                    continue;
                }
                let polled = Python::attach(|py| -> PyResult<()> {
                    py.check_signals()?;
                    if tick.is_multiple_of(10) {
                        report(py)?;
                    }
                    Ok(())
                });
                if let Err(e) = polled {
                    stop.store(true, Ordering::Relaxed);
                    interrupted = Some(e);
                }
            }
            (worker.join(), interrupted)
        })
    });
    if let Some(e) = interrupted {
        return Err(e);
    }
    match outcome {
        Ok(Ok(out)) => {
            report(py)?;
            Ok(out)
        }
        Ok(Err(payload)) | Err(payload) => Err(PyRuntimeError::new_err(format!(
            "retrystorm bug (please report it with the scenario and {repro}): {}",
            panic_text(payload.as_ref())
        ))),
    }
}

/// The results of a run: live (with the study, so `write` can call the CLI's writer) or loaded
/// from a directory the CLI wrote.
#[pyclass(frozen, module = "retrystorm._native")]
struct Results {
    summary: Summary,
    summary_table: Arc<Columns>,
    timeseries_table: std::sync::OnceLock<Arc<Columns>>,
    source: Source,
}

/// A table of results: its columns as Python lists, and as an Arrow C stream.
#[pyclass(frozen, module = "retrystorm._native")]
struct Table {
    columns: Arc<Columns>,
}

#[pymethods]
impl Table {
    /// The column names, in order.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.columns.names.clone()
    }

    fn __len__(&self) -> usize {
        self.columns.rows()
    }

    /// Every column as a list, by name (None for a null).
    fn to_pydict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (name, column) in self.columns.names.iter().zip(&self.columns.columns) {
            let list = match column {
                table::Column::Text(v) => PyList::new(py, v)?,
                table::Column::Float(v) => PyList::new(py, v)?,
                table::Column::Int(v) => PyList::new(py, v)?,
            };
            dict.set_item(name, list)?;
        }
        Ok(dict)
    }

    /// The Arrow PyCapsule interface: the table as one record batch.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // The schema is the table's own; a consumer casts if it asked for another.
        let _ = requested_schema;
        PyCapsule::new_with_value(py, arrow::stream(self.columns.clone()), c"arrow_array_stream")
    }
}

/// Where a result's series come from: the study itself, or `timeseries.csv` read back.
enum Source {
    Live(Box<Study>),
    Loaded(Vec<retrystorm::report::SeriesKey>),
}

impl Results {
    fn new(summary: Summary, source: Source) -> Results {
        Results {
            summary_table: Arc::new(table::summary_table(&summary)),
            timeseries_table: std::sync::OnceLock::new(),
            summary,
            source,
        }
    }

    /// The long-form table, made on first use (it holds a row per bucket, scope and column).
    fn timeseries_columns(&self) -> Arc<Columns> {
        let make = || {
            let (series, buckets): (Vec<Series<'_>>, usize) = match &self.source {
                Source::Live(study) => {
                    let series = study
                        .variants
                        .iter()
                        .flat_map(|v| {
                            let hops = v.hop_series.iter().map(|s| ("hop", s));
                            hops.chain(v.tenant_series.iter().map(|s| ("tenant", s))).map(|(kind, s)| Series {
                                variant: &v.name,
                                scope: format!("{kind}:{}", s.name),
                                rows: &s.rows,
                            })
                        })
                        .collect();
                    (series, retrystorm::report::summary::active_buckets(study))
                }
                Source::Loaded(series) => {
                    let view = series
                        .iter()
                        .map(|(variant, kind, name, rows)| Series { variant, scope: format!("{kind}:{name}"), rows })
                        .collect();
                    (view, series.iter().map(|s| s.3.len()).max().unwrap_or(0))
                }
            };
            Arc::new(table::timeseries_table(series.into_iter(), self.summary.bucket_s, buckets))
        };
        self.timeseries_table.get_or_init(make).clone()
    }
}

#[pymethods]
impl Results {
    /// One row per variant × scope × metric: variant, scope, metric, mean, ci_low, ci_high, unit.
    #[getter]
    fn summary(&self) -> Table {
        Table { columns: self.summary_table.clone() }
    }

    /// Long form: variant, replication, t_s, scope, metric, value.
    #[getter]
    fn timeseries(&self) -> Table {
        Table { columns: self.timeseries_columns() }
    }

    /// summary.json's `verdict`, as JSON text (null without one).
    fn verdict_json(&self) -> String {
        serde_json::to_string(&self.summary.verdict).expect("a verdict serialises")
    }

    /// summary.json's text, as the CLI writes it.
    fn summary_json(&self) -> String {
        String::from_utf8(self.summary.to_bytes()).expect("JSON is UTF-8")
    }

    /// Whether the study is held (`write` can write it).
    #[getter]
    fn live(&self) -> bool {
        matches!(self.source, Source::Live(_))
    }

    /// Writes the CLI's files into `out_dir` (claimed as the CLI claims `--out`; `force` as
    /// `--force`); returns the paths written.
    #[pyo3(signature = (out_dir, force = false))]
    fn write(&self, py: Python<'_>, out_dir: PathBuf, force: bool) -> PyResult<Vec<PathBuf>> {
        let Source::Live(study) = &self.source else {
            return Err(PyValueError::new_err(
                "these results were loaded from a directory: their files are already written there",
            ));
        };
        let claim = cli::claim(&out_dir, force).map_err(|e| PyValueError::new_err(e.to_string()))?;
        py.detach(|| retrystorm::report::write_study(&claim, study))
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
    }
}

/// A study of `run` (`jitter` None) or `compare`; see the Python layer for the arguments.
#[pyfunction]
#[pyo3(signature = (scenario_path, scenario_text, text_name, set, seed, replications, threads, max_memory, jitter, baseline, command, progress))]
#[allow(clippy::too_many_arguments, reason = "the command's flags, one argument each")]
fn study(
    py: Python<'_>,
    scenario_path: Option<String>,
    scenario_text: Option<String>,
    text_name: String,
    set: Vec<String>,
    seed: Option<String>,
    replications: Option<String>,
    threads: Option<String>,
    max_memory: Option<String>,
    jitter: Option<Vec<String>>,
    baseline: Option<String>,
    command: Vec<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Results> {
    let flag = |name: &str, text: &str, why: String| PyValueError::new_err(format!("{name}={text}: {why}"));
    let seed = seed.map(|s| cli::parse_seed(&s).map_err(|w| flag("seed", &s, w))).transpose()?;
    let replications =
        replications.map(|s| cli::parse_count::<u32>(&s).map_err(|w| flag("replications", &s, w))).transpose()?;
    let threads = threads.map(|s| cli::parse_count::<usize>(&s).map_err(|w| flag("threads", &s, w))).transpose()?;
    let max_memory =
        max_memory.map(|s| retrystorm::runner::parse_size(&s).map_err(|w| flag("max_memory", &s, w))).transpose()?;
    let input = match (scenario_path, scenario_text) {
        (Some(path), _) => ScenarioInput::File(path),
        (None, Some(text)) => ScenarioInput::Text { name: text_name, text },
        (None, None) => return Err(PyValueError::new_err("give a scenario: a path, TOML text or a dict")),
    };
    let flags = StudyFlags { set, seed, replications, threads, max_memory, compare: jitter, baseline };
    let job = cli::study_job(&input, &flags).map_err(|e| job_error(py, e))?;
    let warnings = PyModule::import(py, "warnings")?;
    for note in job.notes.iter().chain(&job.scenario.warnings) {
        warnings.call_method1("warn", (note.as_str(),))?;
    }
    let repro = format!("seed {}", job.scenario.seed);
    let study = watched(py, progress, &repro, || cli::run_job(&job, false, command))?;
    Ok(Results::new(Summary::of(&study), Source::Live(Box::new(study))))
}

/// The results in `out_dir`, a directory written by `retrystorm run` or `compare`.
#[pyfunction]
fn load(out_dir: PathBuf) -> PyResult<Results> {
    let max = cli::default_memory_limit();
    let (summary, series) =
        retrystorm::report::read_results(&out_dir, max).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(Results::new(summary, Source::Loaded(series)))
}

/// Runs a command line (`sweep`, `plan`, `map`: the Python layer builds it from keyword
/// arguments) in this process, as `retrystorm` would, with the GIL released, Ctrl-C and progress
/// as for [`study`]. Bad input is a `ValueError` with the CLI's message, a failure an `OSError`.
#[pyfunction]
#[pyo3(signature = (argv, progress = None))]
fn command(py: Python<'_>, argv: Vec<String>, progress: Option<Py<PyAny>>) -> PyResult<()> {
    let repro = format!("the command `{}`", argv.join(" "));
    let args: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
    match watched(py, progress, &repro, || cli::main_with_args(args))? {
        Ok(()) => Ok(()),
        Err(cli::CliError::BadInput(m)) => Err(PyValueError::new_err(m)),
        Err(cli::CliError::Failure(m)) => Err(pyo3::exceptions::PyOSError::new_err(m)),
    }
}

/// The CSV file `path` (written by a command) as a table.
#[pyfunction]
fn csv_table(path: PathBuf) -> PyResult<Table> {
    let text = std::fs::read_to_string(&path)
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("{}: {e}", path.display())))?;
    let columns = table::csv_table(&text).map_err(|e| PyValueError::new_err(format!("{}: {e}", path.display())))?;
    Ok(Table { columns: Arc::new(columns) })
}

/// A dict (its JSON text) as TOML text, for a scenario given as a dict.
#[pyfunction]
fn toml_of_json(json: &str) -> PyResult<String> {
    let value: serde_json::Value = serde_json::from_str(json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let table: toml::Table = toml::Table::try_from(value).map_err(|e| {
        PyValueError::new_err(format!("the scenario dict cannot be written as TOML ({e}); use str, int, float, bool, list and dict values, no None"))
    })?;
    toml::to_string(&table).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Test hook: panics inside [`watched`]'s worker, as a bug in the simulator would (the tests
/// check that Python gets a `RuntimeError` naming the seed, and the process lives on).
#[pyfunction]
fn _panic_in_worker(py: Python<'_>, seed: u64) -> PyResult<()> {
    watched(py, None, &format!("seed {seed}"), || -> u8 { panic!("deliberate panic (test hook)") }).map(|_| ())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("DEFAULT_JITTERS", cli::DEFAULT_JITTERS.to_vec())?;
    m.add_class::<Results>()?;
    m.add_class::<Table>()?;
    m.add_function(wrap_pyfunction!(study, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(toml_of_json, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_in_worker, m)?)?;
    m.add_function(wrap_pyfunction!(command, m)?)?;
    m.add_function(wrap_pyfunction!(csv_table, m)?)?;
    Ok(())
}
