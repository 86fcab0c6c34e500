//! `retrystorm schema [--out FILE]`: prints (or writes) the JSON Schema of the scenario format,
//! for editors that complete and check TOML files against it (README, "Editor completion").

use super::CliError;
use clap::Args;
use std::path::{Path, PathBuf};

/// Flags of `schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Write the schema to FILE (atomically; its folder must exist) instead of printing it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Prints the schema, or writes it to `--out`.
pub fn run(args: SchemaArgs) -> Result<(), CliError> {
    let text = crate::scenario::schema::text();
    let Some(out) = args.out else {
        print!("{text}");
        return Ok(());
    };
    let folder = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if out.is_dir() || !folder.is_dir() {
        let why = if out.is_dir() { "is a directory" } else { "is in a folder that does not exist" };
        return Err(CliError::BadInput(format!(
            "schema: --out {} {why}; give a file path in an existing folder, e.g. --out scenario.schema.json",
            out.display()
        )));
    }
    crate::report::files::write_atomic(&out, text.as_bytes())
        .map_err(|e| CliError::BadInput(format!("schema: --out: {e}; give a file in a folder you can write")))?;
    println!("wrote {}", out.display());
    Ok(())
}
