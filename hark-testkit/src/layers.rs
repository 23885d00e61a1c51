//! The layering check: each crate lists its top-level modules in layers, bottom first, and
//! a module may name (`crate::x…`, in a `use` or inline) only modules of its own layer or a
//! lower one, with no circle among the modules of one layer. ARCHITECTURE.md shows the same
//! tables; a test per crate holds them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every breach of `layers` by the sources under `src`, one line each (file, line, what);
/// empty when the crate keeps to them. `skip`: top-level files outside the library (the
/// binary's own modules), not checked.
pub fn breaches(src: &Path, layers: &[&[&str]], skip: &[&str]) -> Vec<String> {
    let layer_of: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(i, mods)| mods.iter().map(move |m| (*m, i)))
        .collect();
    let mut out = Vec::new();
    let mut edges: BTreeSet<(String, String)> = BTreeSet::new();
    for file in rust_files(src) {
        let rel = file.strip_prefix(src).unwrap_or(&file);
        let Some(module) = top_module(rel) else {
            continue;
        };
        if skip.contains(&module.as_str()) {
            continue;
        }
        let Some(&own) = layer_of.get(module.as_str()) else {
            out.push(format!(
                "{}: module `{module}` is in no layer: add it to the table",
                rel.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (line_no, used) in crate_references(&text) {
            if used == module {
                continue;
            }
            match layer_of.get(used.as_str()) {
                Some(&theirs) if theirs > own => out.push(format!(
                    "{}:{line_no}: `{module}` (layer {own}) uses `{used}` (layer {theirs}), a layer above it",
                    rel.display()
                )),
                Some(&theirs) if theirs == own => {
                    edges.insert((module.clone(), used));
                }
                Some(_) => {}
                None if skip.contains(&used.as_str()) => out.push(format!(
                    "{}:{line_no}: `{module}` uses `{used}`, which is not part of the library",
                    rel.display()
                )),
                None => {}
            }
        }
    }
    // Within a layer: no circle.
    for (a, b) in &edges {
        if reaches(&edges, b, a) {
            out.push(format!(
                "`{a}` and `{b}` use each other (through one layer)"
            ));
        }
    }
    out
}

/// The top-level module a file under `src` belongs to (`backend/relay.rs` → `backend`);
/// `None` for the crate root (`lib.rs`).
fn top_module(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib").then(|| name.to_string())
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Every top-level module a source names through `crate::`, with its line: `crate::a::b`,
/// and each member of a group `crate::{a, b::c}` (across lines). Comments and the unit
/// tests (`#[cfg(test)]` onwards) do not count.
pub fn crate_references(text: &str) -> Vec<(usize, String)> {
    let code: Vec<String> = text
        .lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .map(|l| l.split("//").next().unwrap_or_default().to_string())
        .collect();
    let joined = code.join("\n");
    let mut out = Vec::new();
    let mut rest = joined.as_str();
    let mut offset = 0;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        let start = at + "crate::".len();
        let after = &rest[start..];
        let line = joined[..offset + at].matches('\n').count() + 1;
        // `hark_crate::` or `$crate::` are other things.
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            if let Some(group) = after.strip_prefix('{') {
                for item in top_level_items(group) {
                    let name: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() && name != "self" {
                        out.push((line, name));
                    }
                }
            } else {
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push((line, name));
                }
            }
        }
        offset += start;
        rest = &joined[offset..];
    }
    out
}

/// The items of a `{…}` group up to its closing brace, split at its own commas only.
fn top_level_items(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

fn reaches(edges: &BTreeSet<(String, String)>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(at) = stack.pop() {
        if at == to {
            return true;
        }
        if seen.insert(at.clone()) {
            stack.extend(
                edges
                    .iter()
                    .filter(|(a, _)| *a == at)
                    .map(|(_, b)| b.clone()),
            );
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_found_in_uses_groups_and_inline_paths() {
        let text = "use crate::audio::AudioSource;\nuse crate::{config, backend::{Options, x}};\n// crate::server\nlet a = crate::metrics::X; // crate::tls\nmacro $crate::y\n#[cfg(test)]\nuse crate::session;\n";
        let names: Vec<String> = crate_references(text).into_iter().map(|(_, n)| n).collect();
        assert_eq!(names, ["audio", "config", "backend", "metrics"]);
    }

    #[test]
    fn an_upward_use_and_a_circle_are_named() {
        let dir = std::env::temp_dir().join(format!("hark-layers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("b")).unwrap();
        std::fs::write(dir.join("lib.rs"), "pub mod a;").unwrap();
        std::fs::write(dir.join("a.rs"), "use crate::c::X;\n").unwrap();
        std::fs::write(dir.join("b/mod.rs"), "use crate::a;\n").unwrap();
        std::fs::write(dir.join("c.rs"), "use crate::b;\n").unwrap();
        std::fs::write(dir.join("d.rs"), "").unwrap();
        let found = breaches(&dir, &[&["a", "b"], &["c"]], &[]);
        assert!(
            found
                .iter()
                .any(|b| b.contains("a.rs:1") && b.contains("layer above")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|b| b.contains("`d` is in no layer")),
            "{found:?}"
        );
        std::fs::write(dir.join("a.rs"), "use crate::b;\n").unwrap();
        let found = breaches(&dir, &[&["a", "b"], &["c"]], &["d"]);
        assert!(
            found.iter().any(|b| b.contains("use each other")),
            "{found:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
