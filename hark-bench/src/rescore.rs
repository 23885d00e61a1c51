//! `hark bench --rescore REPORT.json`: a saved run's transcripts scored again, without
//! playing anything, so that runs from before a change to the WER count
//! ([`crate::wer::normalize`]) compare with runs after it.

use std::path::Path;

use anyhow::{Context, bail};

use crate::protocol::Channel;
use crate::report;
use crate::report_model::{READABLE_SCHEMA_VERSIONS, RunReport, SCHEMA_VERSION};
use crate::summary;

/// The run saved in `saved`, scored again.
pub fn rescore_file(saved: &Path) -> anyhow::Result<RunReport> {
    let json = std::fs::read_to_string(saved)
        .with_context(|| format!("cannot read {}", saved.display()))?;
    let mut run: RunReport = serde_json::from_str(&json)
        .with_context(|| format!("{} is not a hark-bench --report", saved.display()))?;
    if !READABLE_SCHEMA_VERSIONS.contains(&run.schema_version) {
        bail!(
            "{} has schema_version {}; this hark-bench reads {READABLE_SCHEMA_VERSIONS:?}",
            saved.display(),
            run.schema_version
        );
    }
    rescore(&mut run);
    Ok(run)
}

/// Every utterance's (and real call's) words and word errors from its reference and
/// finals, and the totals and ratios made of them; every other figure as it was measured,
/// in this version's layout.
pub fn rescore(run: &mut RunReport) {
    run.schema_version = SCHEMA_VERSION;
    // Older reports lack `recorded`; their real calls still have whole-call entries.
    let played_whole = run.settings.recorded && !run.settings.each;
    for t in &mut run.targets {
        for c in &mut t.per_call {
            let whole = played_whole || !c.whole_call.is_empty();
            report::rescore(c, whole);
        }
        t.customer = report::overall(&t.per_call, Channel::Customer);
        t.assistant = report::overall(&t.per_call, Channel::Assistant);
        t.refusals = report::refusals(&t.per_call);
    }
    run.ratios = summary::ratios_between(&run.targets);
}
