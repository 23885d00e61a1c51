//! Progress for a long download: a bar on a terminal, log lines elsewhere.

use std::io::{self, IsTerminal};

pub(crate) enum Progress {
    Bar(indicatif::ProgressBar),
    Log {
        what: String,
        done: u64,
        total: Option<u64>,
        next: u64,
    },
}

impl Progress {
    const LOG_STEP_UNKNOWN: u64 = 10 << 20;

    /// A bar when `bar` is asked for and stderr is a terminal; else an info line every ~10 %
    /// (every 10 MB when the size is unknown).
    pub(crate) fn new(what: &str, bar: bool, total: Option<u64>) -> Progress {
        if bar && io::stderr().is_terminal() {
            let pb = match total {
                Some(len) => indicatif::ProgressBar::new(len),
                None => indicatif::ProgressBar::new_spinner(),
            };
            let name = what.strip_prefix("the ").unwrap_or(what);
            if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
                "{name} {{bar:30}} {{bytes}}/{{total_bytes}} {{bytes_per_sec}} eta {{eta}}"
            )) {
                pb.set_style(style);
            }
            return Progress::Bar(pb);
        }
        let next = total.map_or(Self::LOG_STEP_UNKNOWN, |t| t / 10);
        Progress::Log {
            what: what.to_owned(),
            done: 0,
            total,
            next,
        }
    }

    pub(crate) fn advance(&mut self, n: u64) {
        match self {
            Progress::Bar(pb) => pb.inc(n),
            Progress::Log {
                what,
                done,
                total,
                next,
            } => {
                *done += n;
                if *done < *next {
                    return;
                }
                match *total {
                    Some(t) if t > 0 => {
                        let percent = (*done * 100 / t).min(100);
                        // Decimal MB, as registries and the README give sizes (the wheel:
                        // 56,369,045 bytes, "56 MB"; t >> 20 said 53).
                        tracing::info!("downloading {what}: {percent}% of {} MB", mb(t));
                        *next = (percent / 10 + 1) * t / 10;
                    }
                    _ => {
                        tracing::info!("downloading {what}: {} MB", mb(*done));
                        *next = *done + Self::LOG_STEP_UNKNOWN;
                    }
                }
            }
        }
    }

    pub(crate) fn finish(self) {
        if let Progress::Bar(pb) = self {
            pb.finish_and_clear();
        }
    }
}

/// Bytes in decimal megabytes, rounded.
fn mb(bytes: u64) -> u64 {
    (bytes + 500_000) / 1_000_000
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_are_decimal_megabytes_like_the_readme() {
        // The pinned engine wheel, which the README calls 56 MB.
        assert_eq!(super::mb(56_369_045), 56);
        assert_eq!(super::mb(499_999), 0);
        assert_eq!(super::mb(1_500_000), 2);
    }
}
