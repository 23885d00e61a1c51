//! The index of a speech folder (`transcripts.tsv`): one line per file with its reference
//! transcripts, read the same way for the built-in clips and a user's `--corpus`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// One line of a `transcripts.tsv`.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub index: PathBuf,
    pub line: usize,
    pub file: String,
    /// The reference columns after the file, trimmed; empty ones kept as "".
    pub references: Vec<String>,
}

impl Entry {
    pub fn problem(&self, reason: &str) -> String {
        format!(
            "{}:{}: {}: {reason}",
            self.index.display(),
            self.line,
            self.file
        )
    }

    pub fn reference(&self, column: usize) -> Option<String> {
        self.references
            .get(column)
            .filter(|r| !r.is_empty())
            .cloned()
    }
}

/// Parses an index file; bad and duplicate lines go to `problems`.
pub fn parse_index(text: &str, index: &Path, problems: &mut Vec<String>) -> Vec<Entry> {
    let mut seen = HashSet::new();
    let mut entries = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let mut columns = raw.split('\t').map(str::trim);
        let file = columns.next().unwrap_or_default().to_string();
        let references: Vec<String> = columns.map(str::to_string).collect();
        let at = format!("{}:{line}", index.display());
        if file.is_empty() {
            problems.push(format!("{at}: no file name before the first tab"));
        } else if references.len() > 2 {
            problems.push(format!(
                "{at}: {file}: {} columns; at most 3 (file, customer reference, assistant reference)",
                references.len() + 1
            ));
        } else if !seen.insert(file.clone()) {
            problems.push(format!("{at}: {file}: listed twice"));
        } else {
            entries.push(Entry {
                index: index.to_path_buf(),
                line,
                file,
                references,
            });
        }
    }
    entries
}
