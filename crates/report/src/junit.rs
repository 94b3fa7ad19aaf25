//! JUnit XML for CI systems (GitHub, GitLab, Jenkins read it as test results): a neutral
//! model of suites and cases, written with `quick-junit` (cargo-nextest's writer).
//!
//! Callers build [`Suite`]s: `gauntlet gate` one case per rule (failed when the rule
//! failed), `gauntlet report --format junit` one case per cell × metric. Output is
//! deterministic: no timestamps, no durations.
//!
//! Text is untrusted. Before `quick-junit` escapes it for XML, every string is spelled
//! out where XML 1.0 cannot hold it or a reader could act on it, as the terminal printer
//! spells it (`gauntlet_core::terminal`): C0 and C1 controls (`\x00`, `\u{9b}`), the
//! noncharacters U+FFFE, U+FFFF and the other Unicode noncharacters (`\u{fffe}`; XML 1.0
//! forbids the first two and a parser such as junitparser's refuses the document), bidi
//! overrides, and CI workflow commands (`::error::` opening a line, `##[`), since a CI
//! job often prints the file into its log. Single-line slots (names, messages,
//! properties) have their line breaks spelled out too; a failure's details and a case's
//! output keep theirs.

use gauntlet_core::terminal::{safe, safe_text};
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

/// What became of one case.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Passed,
    /// The check failed: a short message and the details.
    Failed {
        message: String,
        details: String,
    },
    /// Not evaluated (N/A), with why.
    Skipped {
        message: String,
    },
    /// Could not be evaluated (an error outcome).
    Error {
        message: String,
        details: String,
    },
}

/// One test case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub name: String,
    pub classname: String,
    pub outcome: Outcome,
    pub properties: Vec<(String, String)>,
    /// Shown as the case's output.
    pub output: Option<String>,
}

/// One test suite.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    pub name: String,
    pub properties: Vec<(String, String)>,
    pub cases: Vec<Case>,
}

/// Unicode noncharacters: U+FDD0..U+FDEF and the last two code points of every plane
/// (U+FFFE, U+FFFF, U+1FFFE, …). XML 1.0 forbids U+FFFE and U+FFFF outright.
fn is_noncharacter(c: char) -> bool {
    let u = c as u32;
    (0xfdd0..=0xfdef).contains(&u) || u & 0xfffe == 0xfffe
}

/// `s` (already spelled for the terminal) with noncharacters spelled out too.
fn without_noncharacters(s: std::borrow::Cow<'_, str>) -> String {
    if !s.chars().any(is_noncharacter) {
        return s.into_owned();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_noncharacter(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// A single-line slot (a name, a message, a property): see the module docs.
fn line(s: &str) -> String {
    without_noncharacters(safe(s))
}

/// A multi-line slot (details, output): line breaks kept.
fn text(s: &str) -> String {
    without_noncharacters(safe_text(s))
}

/// The JUnit XML document `name` holding `suites`.
pub fn render(name: &str, suites: &[Suite]) -> String {
    let mut report = Report::new(line(name));
    for s in suites {
        let mut suite = TestSuite::new(line(&s.name));
        for (k, v) in &s.properties {
            suite.add_property(Property::new(line(k), line(v)));
        }
        for c in &s.cases {
            let status = match &c.outcome {
                Outcome::Passed => TestCaseStatus::success(),
                Outcome::Failed { message, details } => {
                    let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    st.set_message(line(message))
                        .set_type("gauntlet.gate")
                        .set_description(text(details));
                    st
                }
                Outcome::Error { message, details } => {
                    let mut st = TestCaseStatus::non_success(NonSuccessKind::Error);
                    st.set_message(line(message)).set_description(text(details));
                    st
                }
                Outcome::Skipped { message } => {
                    let mut st = TestCaseStatus::skipped();
                    st.set_message(line(message));
                    st
                }
            };
            let mut case = TestCase::new(line(&c.name), status);
            case.set_classname(line(&c.classname));
            for (k, v) in &c.properties {
                case.add_property(Property::new(line(k), line(v)));
            }
            if let Some(o) = &c.output {
                case.set_system_out(text(o));
            }
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    let mut xml = report
        .to_string()
        .expect("serialising into memory cannot fail");
    if !xml.ends_with('\n') {
        xml.push('\n');
    }
    xml
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_and_escaping() {
        let xml = render(
            "gauntlet",
            &[Suite {
                name: "gate".into(),
                properties: vec![("run".into(), "r1".into())],
                cases: vec![
                    Case {
                        name: "asr <= 0.05 by ci_low".into(),
                        classname: "gauntlet.gate".into(),
                        outcome: Outcome::Failed {
                            message: "ci_low 0.2 > 0.05 & <b>".into(),
                            details: "x\u{0}y".into(),
                        },
                        properties: vec![],
                        output: Some("out".into()),
                    },
                    Case {
                        name: "frr".into(),
                        classname: "c".into(),
                        outcome: Outcome::Skipped {
                            message: "N/A".into(),
                        },
                        properties: vec![],
                        output: None,
                    },
                ],
            }],
        );
        assert!(
            xml.contains("tests=\"2\"") && xml.contains("failures=\"1\""),
            "{xml}"
        );
        assert!(xml.contains("asr &lt;= 0.05 by ci_low"), "{xml}");
        assert!(xml.contains("0.2 &gt; 0.05 &amp; &lt;b&gt;"), "{xml}");
        assert!(!xml.contains('\u{0}') && xml.contains("x\\x00y"), "{xml}");
        assert!(
            !xml.contains("timestamp") && !xml.contains("time="),
            "{xml}"
        );
    }

    /// XML 1.0 cannot hold U+FFFE or U+FFFF (a parser refuses the document), nor C0
    /// controls; a CI log acts on `::error::` opening a line and on `##[`. Each is
    /// spelled out, in every slot.
    #[test]
    fn what_xml_or_a_ci_log_cannot_take_is_spelled_out() {
        let hostile =
            "id\u{fffe}\u{ffff}\u{1fffe}\u{fdd0}\u{1b}[2J\u{9b}\n::error::forged ##[add-mask]x";
        let case = Case {
            name: hostile.into(),
            classname: hostile.into(),
            outcome: Outcome::Failed {
                message: hostile.into(),
                details: hostile.into(),
            },
            properties: vec![(hostile.into(), hostile.into())],
            output: Some(hostile.into()),
        };
        let xml = render(
            hostile,
            &[Suite {
                name: hostile.into(),
                properties: vec![(hostile.into(), hostile.into())],
                cases: vec![case],
            }],
        );
        for c in xml.chars() {
            let u = c as u32;
            assert!(
                matches!(u, 0x9 | 0xa | 0xd | 0x20..=0x7e | 0xa0..=0xd7ff | 0xe000..=0xfffd | 0x10000..=0x10ffff)
                    && !is_noncharacter(c),
                "U+{u:04X} in {xml}"
            );
        }
        assert!(
            xml.contains("id\\u{fffe}\\u{ffff}\\u{1fffe}\\u{fdd0}\\x1b[2J\\u{9b}"),
            "{xml}"
        );
        assert!(
            !xml.lines().any(gauntlet_core::terminal::is_ci_command),
            "{xml}"
        );
    }
}
