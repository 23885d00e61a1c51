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
/// finals, how its finals end, and the totals, reply waits and ratios made of them; every
/// other figure as it was measured, in this version's layout. A report before schema 5
/// knows no pauses: its premature ends (then finals ending . ? ! before the last, now
/// `terminal_before_last`) become none of none.
pub fn rescore(run: &mut RunReport) {
    let pauses_unknown = run.schema_version < 5;
    run.schema_version = SCHEMA_VERSION;
    // Older reports lack `recorded`; their real calls still have whole-call entries.
    let played_whole = run.settings.recorded && !run.settings.each;
    for t in &mut run.targets {
        for c in &mut t.per_call {
            if pauses_unknown {
                for u in &mut c.utterances {
                    (u.inner_pauses, u.premature_ends) = (0, 0);
                }
            }
            let whole = played_whole || !c.whole_call.is_empty();
            report::rescore(c, whole);
        }
        t.customer = report::overall(&t.per_call, Channel::Customer);
        t.assistant = report::overall(&t.per_call, Channel::Assistant);
        t.reply_wait_ms = report::reply_waits(&t.per_call);
        t.refusals = report::refusals(&t.per_call);
    }
    run.ratios = summary::ratios_between(&run.targets);
}
