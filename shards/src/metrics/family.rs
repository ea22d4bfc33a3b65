//! A metric family declared once: its name, type, label names and help. Renderers write a
//! family's header (`# HELP` and `# TYPE`) and its samples through its declaration, and the
//! catalogue lists the declarations, so a scrape, its help text and `docs/metrics.md` cannot
//! drift apart.

use std::fmt::{Display, Write as _};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Counter,
    Gauge,
    Histogram,
}

impl MetricKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
            MetricKind::Histogram => "histogram",
        }
    }
}

#[derive(Debug)]
pub struct Family {
    pub name: &'static str,
    pub kind: MetricKind,
    /// The labels each series of the family carries, in the order samples give their values.
    pub labels: &'static [&'static str],
    pub help: &'static str,
}

impl Family {
    pub const fn counter(name: &'static str, help: &'static str) -> Family {
        Family::new(name, MetricKind::Counter, help)
    }

    pub const fn gauge(name: &'static str, help: &'static str) -> Family {
        Family::new(name, MetricKind::Gauge, help)
    }

    pub const fn histogram(name: &'static str, help: &'static str) -> Family {
        Family::new(name, MetricKind::Histogram, help)
    }

    const fn new(name: &'static str, kind: MetricKind, help: &'static str) -> Family {
        Family {
            name,
            kind,
            labels: &[],
            help,
        }
    }

    /// The same family with a series for each value of these labels.
    pub const fn by(self, labels: &'static [&'static str]) -> Family {
        Family { labels, ..self }
    }

    /// `# HELP` and `# TYPE`, written once before the family's samples.
    pub fn header(&self, out: &mut String) {
        let (name, kind) = (self.name, self.kind.as_str());
        let _ = writeln!(out, "# HELP {name} {}\n# TYPE {name} {kind}", self.help);
    }

    /// One sample: `name{label="value",...} value`, label values in `labels` order.
    pub fn sample(&self, out: &mut String, label_values: &[&dyn Display], value: impl Display) {
        self.series(out, "", label_values, None, value);
    }

    /// A series of the family under a suffix (a histogram's `_bucket`, `_sum`, `_count`), with
    /// an extra `le` label for a bucket. Label values are escaped as the text format requires:
    /// group ids and mirror names are clients' strings.
    pub(super) fn series(
        &self,
        out: &mut String,
        suffix: &str,
        label_values: &[&dyn Display],
        le: Option<&dyn Display>,
        value: impl Display,
    ) {
        debug_assert_eq!(
            label_values.len(),
            self.labels.len(),
            "{} is labelled by {:?}",
            self.name,
            self.labels
        );
        out.push_str(self.name);
        out.push_str(suffix);
        let mut pairs = self
            .labels
            .iter()
            .copied()
            .zip(label_values.iter().copied())
            .chain(le.map(|bound| ("le", bound)));
        if let Some(first) = pairs.next() {
            out.push('{');
            write_label(out, first);
            for pair in pairs {
                out.push(',');
                write_label(out, pair);
            }
            out.push('}');
        }
        let _ = writeln!(out, " {value}");
    }
}

fn write_label(out: &mut String, (name, value): (&str, &dyn Display)) {
    let text = value.to_string();
    out.push_str(name);
    out.push_str("=\"");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAG: Family = Family::gauge("shoal_test_lag", "A test family.").by(&["group", "n"]);

    #[test]
    fn a_label_value_cannot_break_out_of_its_quotes() {
        let mut out = String::new();
        LAG.header(&mut out);
        LAG.sample(&mut out, &[&"evil\"} 1\nshoal_x{a=\"\\", &3], 7);
        assert_eq!(out.lines().count(), 3, "{out}");
        assert!(out.contains(r#"shoal_test_lag{group="evil\"} 1\nshoal_x{a=\"\\",n="3"} 7"#));
        assert!(
            out.starts_with("# HELP shoal_test_lag A test family.\n# TYPE shoal_test_lag gauge\n")
        );
    }
}
