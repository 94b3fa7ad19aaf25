//! JUnit XML for CI systems (GitHub, GitLab, Jenkins read it as test results): a neutral
//! model of suites and cases, written with `quick-junit` (cargo-nextest's writer).
//!
//! Callers build [`Suite`]s: `gauntlet gate` one case per rule (failed when the rule
//! failed), `gauntlet report --format junit` one case per cell × metric. Output is
//! deterministic: no timestamps, no durations; text is untrusted and `quick-junit`
//! escapes it (and drops what XML cannot hold).

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

/// The JUnit XML document `name` holding `suites`.
pub fn render(name: &str, suites: &[Suite]) -> String {
    let mut report = Report::new(name);
    for s in suites {
        let mut suite = TestSuite::new(s.name.as_str());
        for (k, v) in &s.properties {
            suite.add_property(Property::new(k.as_str(), v.as_str()));
        }
        for c in &s.cases {
            let status = match &c.outcome {
                Outcome::Passed => TestCaseStatus::success(),
                Outcome::Failed { message, details } => {
                    let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    st.set_message(message.as_str())
                        .set_type("gauntlet.gate")
                        .set_description(details.as_str());
                    st
                }
                Outcome::Error { message, details } => {
                    let mut st = TestCaseStatus::non_success(NonSuccessKind::Error);
                    st.set_message(message.as_str())
                        .set_description(details.as_str());
                    st
                }
                Outcome::Skipped { message } => {
                    let mut st = TestCaseStatus::skipped();
                    st.set_message(message.as_str());
                    st
                }
            };
            let mut case = TestCase::new(c.name.as_str(), status);
            case.set_classname(c.classname.as_str());
            for (k, v) in &c.properties {
                case.add_property(Property::new(k.as_str(), v.as_str()));
            }
            if let Some(o) = &c.output {
                case.set_system_out(o.as_str());
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
        assert!(!xml.contains('\u{0}'));
        assert!(
            !xml.contains("timestamp") && !xml.contains("time="),
            "{xml}"
        );
    }
}
