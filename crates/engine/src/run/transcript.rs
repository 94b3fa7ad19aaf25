//! transcripts.jsonl: the line format (one attempt per line, the derived `Serialize`
//! and a hand-written encoder that writes the same bytes faster). The run appends each
//! unit's lines, in unit order, through the manifest's `HashingWriter`.

use gauntlet_core::json;
use gauntlet_core::message::{Message, Role};
use gauntlet_core::outcome::{Outcome, Verdict};
use serde::Serialize;

#[derive(Serialize)]
pub(super) struct TranscriptLine<'a> {
    /// Written only in multi-trial runs, so single-trial transcripts are unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) trial: Option<u32>,
    pub(super) behavior_id: &'a str,
    pub(super) attack_name: &'a str,
    pub(super) target_name: &'a str,
    pub(super) dataset: &'a str,
    pub(super) dataset_version: &'a str,
    pub(super) expected: &'static str,
    /// The behavior's own prompt, written only when no user turn of the transcript is
    /// that prompt (an attack or transform rewrote it), so readers can show the goal
    /// beside what was sent; `static` lines are unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) goal: Option<&'a str>,
    pub(super) attempt: u32,
    pub(super) transcript: &'a [Message],
    pub(super) query_count: u32,
    pub(super) metadata: &'a serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) stop_reason: Option<&'a gauntlet_core::message::StopReason>,
    /// The target's tokens for this attempt's final response, when the provider reported
    /// them (replayed from the journal on a rerun, so reruns stay byte-identical).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) usage: Option<&'a gauntlet_core::message::Usage>,
    /// What the application was seen doing during the final call (a target with
    /// `evidence`): replayed from the journal on a rerun, read back by `rescore`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) evidence: Option<&'a gauntlet_core::evidence::Evidence>,
    pub(super) error: Option<&'a str>,
    pub(super) verdicts: Vec<&'a Verdict>,
}

impl TranscriptLine<'_> {
    /// Appends the line's JSON (no newline) to `buf`: exactly the bytes the derived
    /// `Serialize` makes `serde_json::to_writer` write (the derive stays as the tests'
    /// oracle). Strings, above all message contents, go through the SIMD escaper;
    /// the small structured parts are left to serde_json.
    pub(super) fn write_json(&self, buf: &mut Vec<u8>) {
        buf.push(b'{');
        if let Some(t) = self.trial {
            buf.extend_from_slice(b"\"trial\":");
            write_u32(buf, t);
            buf.push(b',');
        }
        buf.extend_from_slice(b"\"behavior_id\":");
        json::write_str(buf, self.behavior_id);
        buf.extend_from_slice(b",\"attack_name\":");
        json::write_str(buf, self.attack_name);
        buf.extend_from_slice(b",\"target_name\":");
        json::write_str(buf, self.target_name);
        buf.extend_from_slice(b",\"dataset\":");
        json::write_str(buf, self.dataset);
        buf.extend_from_slice(b",\"dataset_version\":");
        json::write_str(buf, self.dataset_version);
        buf.extend_from_slice(b",\"expected\":");
        json::write_str(buf, self.expected);
        if let Some(g) = self.goal {
            buf.extend_from_slice(b",\"goal\":");
            json::write_str(buf, g);
        }
        buf.extend_from_slice(b",\"attempt\":");
        write_u32(buf, self.attempt);
        buf.extend_from_slice(b",\"transcript\":");
        write_list(buf, self.transcript, write_message);
        buf.extend_from_slice(b",\"query_count\":");
        write_u32(buf, self.query_count);
        buf.extend_from_slice(b",\"metadata\":");
        serde_json::to_writer(&mut *buf, self.metadata).expect("metadata serialises");
        if let Some(r) = self.stop_reason {
            buf.extend_from_slice(b",\"stop_reason\":");
            serde_json::to_writer(&mut *buf, r).expect("stop reasons serialise");
        }
        if let Some(u) = self.usage {
            buf.extend_from_slice(b",\"usage\":");
            serde_json::to_writer(&mut *buf, u).expect("usage serialises");
        }
        if let Some(e) = self.evidence {
            buf.extend_from_slice(b",\"evidence\":");
            serde_json::to_writer(&mut *buf, e).expect("evidence serialises");
        }
        buf.extend_from_slice(b",\"error\":");
        match self.error {
            Some(e) => json::write_str(buf, e),
            None => buf.extend_from_slice(b"null"),
        }
        buf.extend_from_slice(b",\"verdicts\":");
        write_list(buf, self.verdicts.iter().copied(), write_verdict);
        buf.push(b'}');
    }
}

/// `line` (one transcript line, without its line break) with its top-level `verdicts`
/// replaced by `verdicts`, written as a run writes them; every other byte is kept. A
/// rescore writes its transcripts this way, so they are the lines a run judged with
/// the rescoring judge would have written. `None` when the line is not a JSON object
/// holding a top-level `verdicts` key.
pub(crate) fn replace_verdicts(line: &[u8], verdicts: &[&Verdict]) -> Option<Vec<u8>> {
    let (start, end) = top_level_value(line, b"verdicts")?;
    let mut out = Vec::with_capacity(line.len() + 64 * verdicts.len());
    out.extend_from_slice(&line[..start]);
    write_list(&mut out, verdicts.iter().copied(), write_verdict);
    out.extend_from_slice(&line[end..]);
    Some(out)
}

/// The byte span of the value of `key` in the top-level JSON object `s` (the key spelt
/// without escapes, as serde_json writes it). Strings are skipped whole, so a key or a
/// quote inside a string or a nested object never matches.
fn top_level_value(s: &[u8], key: &[u8]) -> Option<(usize, usize)> {
    let ws = |mut i: usize| {
        while s.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    let mut i = ws(0);
    if s.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = ws(i);
        if s.get(i) != Some(&b'"') {
            return None;
        }
        let k_end = string_end(s, i)?;
        let is_key = &s[i + 1..k_end - 1] == key;
        i = ws(k_end);
        if s.get(i) != Some(&b':') {
            return None;
        }
        let v_start = ws(i + 1);
        let v_end = value_end(s, v_start)?;
        if is_key {
            return Some((v_start, v_end));
        }
        i = ws(v_end);
        match s.get(i) {
            Some(b',') => i += 1,
            _ => return None,
        }
    }
}

/// One past the closing quote of the string opening at `s[i]` (a `"`).
fn string_end(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match s.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// One past the end of the JSON value starting at `s[i]`: a string, an object or array
/// (brackets counted outside strings), or a scalar (up to the next delimiter).
fn value_end(s: &[u8], i: usize) -> Option<usize> {
    match s.get(i)? {
        b'"' => string_end(s, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match s.get(j)? {
                    b'"' => {
                        j = string_end(s, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while s
                .get(j)
                .is_some_and(|c| !matches!(c, b',' | b'}' | b']') && !c.is_ascii_whitespace())
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// A JSON array of `items`, each written by `each`.
fn write_list<T>(buf: &mut Vec<u8>, items: impl IntoIterator<Item = T>, each: fn(&mut Vec<u8>, T)) {
    buf.push(b'[');
    for (i, x) in items.into_iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        each(buf, x);
    }
    buf.push(b']');
}

/// One verdict as its derived `Serialize` writes it (half the instructions of serde's
/// field-by-field path, whose key and string escaping is a byte at a time; a transcript
/// line carries one verdict per judge).
pub(super) fn write_verdict(buf: &mut Vec<u8>, v: &Verdict) {
    buf.extend_from_slice(b"{\"judge\":");
    json::write_str(buf, &v.judge);
    buf.extend_from_slice(match v.outcome {
        Outcome::Success => b",\"outcome\":\"success\"",
        Outcome::Failure => b",\"outcome\":\"failure\"",
        Outcome::Error => b",\"outcome\":\"error\"",
        Outcome::Uncertain => b",\"outcome\":\"uncertain\"",
        Outcome::NoEvidence => b",\"outcome\":\"no_evidence\"",
        Outcome::NotApplicable => b",\"outcome\":\"not_applicable\"",
    });
    match v.refused {
        Some(true) => buf.extend_from_slice(b",\"refused\":true"),
        Some(false) => buf.extend_from_slice(b",\"refused\":false"),
        None => {}
    }
    if let Some(score) = v.score {
        buf.extend_from_slice(b",\"score\":");
        serde_json::to_writer(&mut *buf, &score).expect("a float serialises");
    }
    if !v.reason.is_empty() {
        buf.extend_from_slice(b",\"reason\":");
        json::write_str(buf, &v.reason);
    }
    if let Some(e) = &v.error {
        buf.extend_from_slice(b",\"error\":");
        json::write_str(buf, e);
    }
    if let Some(facts) = &v.injection {
        buf.extend_from_slice(b",\"injection\":");
        serde_json::to_writer(&mut *buf, facts).expect("injection facts serialise");
    }
    if let Some(t) = &v.on_topic {
        buf.extend_from_slice(b",\"on_topic\":");
        serde_json::to_writer(&mut *buf, t).expect("an on-topic check serialises");
    }
    if let Some(p) = &v.probability {
        buf.extend_from_slice(b",\"probability\":");
        serde_json::to_writer(&mut *buf, p).expect("a refusal probability serialises");
    }
    if !v.categories.is_empty() {
        buf.extend_from_slice(b",\"categories\":");
        write_list(buf, &v.categories, |buf, c: &String| {
            json::write_str(buf, c);
        });
    }
    buf.push(b'}');
}

/// A `u32` as serde_json writes it (plain decimal).
pub(super) fn write_u32(buf: &mut Vec<u8>, n: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

/// One message as its derived `Serialize` writes it.
pub(super) fn write_message(buf: &mut Vec<u8>, m: &Message) {
    buf.extend_from_slice(match m.role {
        Role::System => b"{\"role\":\"system\",\"content\":",
        Role::User => b"{\"role\":\"user\",\"content\":",
        Role::Assistant => b"{\"role\":\"assistant\",\"content\":",
        Role::Tool => b"{\"role\":\"tool\",\"content\":",
    });
    json::write_str(buf, &m.content);
    if let Some(name) = &m.name {
        buf.extend_from_slice(b",\"name\":");
        json::write_str(buf, name);
    }
    if !m.tool_calls.is_empty() {
        buf.extend_from_slice(b",\"tool_calls\":");
        serde_json::to_writer(&mut *buf, &m.tool_calls).expect("tool calls serialise");
    }
    if let Some(id) = &m.tool_call_id {
        buf.extend_from_slice(b",\"tool_call_id\":");
        json::write_str(buf, id);
    }
    buf.push(b'}');
}

#[cfg(test)]
mod transcript_line_tests {
    use super::*;
    use gauntlet_calls::strategies::content;
    use gauntlet_core::message::{StopReason, ToolCall};
    use proptest::prelude::*;

    /// The hand-written line and the derived one, as text. Every line also reads back
    /// as the readers' schema, `gauntlet_results::TranscriptRecord`, and writes again
    /// to the very same bytes: the writer and the schema have the same fields.
    fn both(line: &TranscriptLine) -> (String, String) {
        let mut ours = b"prev\n".to_vec();
        line.write_json(&mut ours);
        let mut want = b"prev\n".to_vec();
        serde_json::to_writer(&mut want, line).unwrap();
        let read: gauntlet_results::TranscriptRecord =
            serde_json::from_slice(&ours[5..]).expect("a written line reads as the schema");
        let again = serde_json::to_vec(&read).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&again),
            String::from_utf8_lossy(&ours[5..]),
            "the schema writes a line back byte for byte"
        );
        (
            String::from_utf8(ours).unwrap(),
            String::from_utf8(want).unwrap(),
        )
    }

    fn verdicts() -> Vec<Verdict> {
        serde_json::from_value(serde_json::json!([
            {"judge": "leak_detector", "outcome": "success", "refused": false, "score": 0.75,
             "reason": "matched \"secret\"\n"},
            {"judge": "g", "outcome": "error", "error": "grader \u{1} failed"},
            {"judge": "h", "outcome": "failure"}
        ]))
        .unwrap()
    }

    fn messages() -> Vec<Message> {
        let mut tool_call = Message::assistant("calling é \u{2028}");
        tool_call.tool_calls = vec![
            ToolCall {
                name: "search".into(),
                arguments: serde_json::json!({"q": "x\"y", "n": [1, 2.5, null]}),
                call_id: "call_1".into(),
            },
            ToolCall {
                name: "t2".into(),
                arguments: serde_json::json!(null),
                call_id: "call_2".into(),
            },
        ];
        let mut tool = Message::user("result\twith\u{0}nul");
        tool.role = Role::Tool;
        tool.tool_call_id = Some("call_1".into());
        tool.name = Some("search \\ tool".into());
        let mut named = Message::user("hi");
        named.name = Some("alice".into());
        vec![
            Message::system("You are \"careful\".\r\n\u{7f}"),
            named,
            tool_call,
            tool,
            Message::assistant(""),
            Message::user("emoji 😀 and \u{2029} and \u{1f}\u{b}\u{c}\u{8}"),
        ]
    }

    fn line<'a>(
        transcript: &'a [Message],
        metadata: &'a serde_json::Value,
        vs: &'a [Verdict],
    ) -> TranscriptLine<'a> {
        TranscriptLine {
            trial: None,
            behavior_id: "beh-1",
            attack_name: "direct \"ask\"",
            target_name: "ref/mem",
            dataset: "leak",
            dataset_version: "1.0\n",
            expected: "should_refuse",
            goal: None,
            attempt: 3,
            transcript,
            query_count: 1,
            metadata,
            stop_reason: None,
            usage: None,
            evidence: None,
            error: None,
            verdicts: vs.iter().collect(),
        }
    }

    #[test]
    fn hand_written_lines_are_the_derived_ones() {
        let ms = messages();
        let vs = verdicts();
        let metas = [
            serde_json::Value::Null,
            serde_json::json!({}),
            serde_json::json!({"z": 1, "a": ["\u{1}", {"b": true}], "f": -0.5}),
        ];
        let stops = [
            StopReason::Stop,
            StopReason::Length,
            StopReason::ToolCalls,
            StopReason::Refusal,
            StopReason::Other("odd \"reason\"".into()),
        ];
        for meta in &metas {
            for trial in [None, Some(0), Some(7), Some(u32::MAX)] {
                for stop in [None, Some(&stops[0]), Some(&stops[4])] {
                    for error in [None, Some("timeout: \"x\"\n")] {
                        for n in [0, 1, ms.len()] {
                            for nv in [0, 1, vs.len()] {
                                let mut l = line(&ms[..n], meta, &vs[..nv]);
                                l.trial = trial;
                                l.stop_reason = stop;
                                l.error = error;
                                l.attempt = n as u32 * 1_000_003;
                                l.query_count = nv as u32;
                                let (ours, want) = both(&l);
                                assert_eq!(ours, want);
                            }
                        }
                    }
                }
            }
        }
        for stop in &stops {
            let mut l = line(&ms, &metas[2], &vs);
            l.stop_reason = Some(stop);
            let (ours, want) = both(&l);
            assert_eq!(ours, want);
        }
        // The goal of a rewritten prompt and the attempt's usage, when there are.
        let usage = gauntlet_core::message::Usage {
            input_tokens: 17,
            output_tokens: 4_000_000_000,
        };
        for goal in [None, Some("the \"goal\"\n")] {
            for u in [None, Some(&usage)] {
                let mut l = line(&ms, &metas[1], &vs);
                l.goal = goal;
                l.usage = u;
                l.stop_reason = Some(&stops[0]);
                let (ours, want) = both(&l);
                assert_eq!(ours, want);
            }
        }
    }

    /// A line with its verdicts replaced is byte for byte the line written with the new
    /// verdicts, however the strings before them look (a `"verdicts":` inside a reply,
    /// a `verdicts` key inside the metadata).
    #[test]
    fn replaced_verdicts_are_the_line_written_with_them() {
        let ms = messages();
        let vs = verdicts();
        let meta = serde_json::json!({"verdicts": [{"judge": "x"}], "s": "\",\"verdicts\":[]}"});
        let mut tricky = ms.clone();
        tricky.push(Message::assistant(",\"verdicts\":[{\"judge\":\"y\"}]}"));
        for old in [&vs[..0], &vs[..1], &vs[..]] {
            for new in [&vs[..0], &vs[1..2], &vs[..]] {
                let before = line(&tricky, &meta, old);
                let mut written = Vec::new();
                before.write_json(&mut written);
                let after = line(&tricky, &meta, new);
                let mut want = Vec::new();
                after.write_json(&mut want);
                let new_refs: Vec<&Verdict> = new.iter().collect();
                assert_eq!(
                    String::from_utf8(replace_verdicts(&written, &new_refs).unwrap()).unwrap(),
                    String::from_utf8(want).unwrap()
                );
            }
        }
        // Whitespace a line written by hand may hold, and lines without verdicts.
        let spaced = b" { \"a\" : [1, {\"verdicts\": 2}] , \"verdicts\" : [ {\"judge\":\"z\"} ] } ";
        let out = replace_verdicts(spaced, &[&vs[2]]).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["verdicts"][0]["judge"], "h");
        assert_eq!(v["a"][1]["verdicts"], 2);
        for bad in [
            &b""[..],
            b"[]",
            b"{}",
            b"{\"a\":1}",
            b"{\"verdicts\"",
            b"{\"a\":\"x",
        ] {
            assert!(
                replace_verdicts(bad, &[]).is_none(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn write_u32_is_decimal() {
        for n in [
            0,
            1,
            9,
            10,
            99,
            100,
            12345,
            999_999_999,
            1_000_000_000,
            u32::MAX,
        ] {
            let mut b = Vec::new();
            write_u32(&mut b, n);
            assert_eq!(b, n.to_string().into_bytes());
        }
    }

    proptest! {
        /// Any bytes: the verdicts' splice never panics, and what it returns parses
        /// whenever the input did, with exactly the new verdicts.
        #[test]
        fn replacing_verdicts_of_any_bytes_never_panics(
            bytes in prop::collection::vec(any::<u8>(), 0..200),
            text in "\\PC{0,80}",
        ) {
            let _ = replace_verdicts(&bytes, &[]);
            let v = Verdict::uncertain("j", "r");
            let line = serde_json::to_vec(&serde_json::json!({
                "t": text, "verdicts": [{"judge": text}], "u": [text]
            }))
            .unwrap();
            let out = replace_verdicts(&line, &[&v]).unwrap();
            let parsed: serde_json::Value = serde_json::from_slice(&out).unwrap();
            prop_assert_eq!(&parsed["verdicts"], &serde_json::json!([v]));
            prop_assert_eq!(&parsed["t"], &serde_json::json!(text));
            if let Ok(s) = std::str::from_utf8(&bytes)
                && serde_json::from_str::<serde_json::Value>(s).is_ok_and(|x| x.get("verdicts").is_some())
                && let Some(out) = replace_verdicts(&bytes, &[&v])
            {
                let parsed: serde_json::Value = serde_json::from_slice(&out).unwrap();
                prop_assert_eq!(&parsed["verdicts"], &serde_json::json!([v]));
            }
        }

        #[test]
        fn hand_written_line_is_derived_for_any_contents(
            contents in prop::collection::vec(content(), 0..5),
            ids in (content(), content()),
            error in prop::option::of(content()),
            trial in prop::option::of(any::<u32>()),
        ) {
            let mut ms: Vec<Message> = contents
                .iter()
                .enumerate()
                .map(|(i, c)| match i % 3 {
                    0 => Message::user(c.clone()),
                    1 => Message::assistant(c.clone()),
                    _ => {
                        let mut m = Message::user(c.clone());
                        m.role = Role::Tool;
                        m.tool_call_id = Some(ids.1.clone());
                        m
                    }
                })
                .collect();
            if let Some(m) = ms.first_mut() {
                m.name = Some(ids.0.clone());
            }
            let meta = serde_json::json!({"attack": ids.0});
            let vs = verdicts();
            let mut l = line(&ms, &meta, &vs);
            l.behavior_id = &ids.0;
            l.target_name = &ids.1;
            l.error = error.as_deref();
            l.trial = trial;
            let stop = StopReason::Stop;
            if error.is_none() {
                l.stop_reason = Some(&stop);
            }
            let (ours, want) = both(&l);
            prop_assert_eq!(ours, want);
        }

        /// Any verdict (every optional field present or not, any strings, any float
        /// including non-finite ones) is written as the derive writes it.
        #[test]
        fn hand_written_verdicts_are_the_derived_ones(
            judge in content(),
            outcome in prop::sample::select(vec![Outcome::Success, Outcome::Failure, Outcome::Error, Outcome::Uncertain, Outcome::NoEvidence, Outcome::NotApplicable]),
            refused in prop::option::of(any::<bool>()),
            score in prop::option::of(prop_oneof![
                any::<f64>(),
                Just(f64::NAN),
                Just(f64::INFINITY),
                Just(-0.0),
                Just(0.1 + 0.2),
            ]),
            reason in prop_oneof![Just(String::new()), content()],
            error in prop::option::of(content()),
            injection in prop::option::of((
                any::<bool>(),
                any::<bool>(),
                prop::option::of(any::<bool>()),
                prop::option::of((any::<bool>(), 0usize..3, prop::option::of(0usize..3))),
            )),
            on_topic in prop::option::of((-1.0f64..=1.0, 0.0f64..=1.0)),
            probability in prop::option::of((
                0.0f64..=1.0,
                0.0f64..=1.0,
                0.0f64..=0.5,
                prop::option::of(any::<bool>()),
            )),
            categories in prop::collection::vec(content(), 0..3),
        ) {
            let v = Verdict {
                judge,
                outcome,
                refused,
                score,
                reason,
                error,
                injection: injection.map(|(injected, task_completed, unparsed_tool_call, ia)| {
                    use gauntlet_core::outcome::{InjecAgentAttack, InjecAgentFacts, StepEval};
                    let step = |i: usize| {
                        [StepEval::Succ, StepEval::Unsucc, StepEval::Invalid][i]
                    };
                    gauntlet_core::outcome::InjectionFacts {
                        injected,
                        task_completed,
                        delivered: None,
                        no_tool_calls: None,
                        unparsed_tool_call,
                        injecagent: ia.map(|(dh, s1, s2)| InjecAgentFacts {
                            attack: if dh { InjecAgentAttack::Dh } else { InjecAgentAttack::Ds },
                            step1: step(s1),
                            step2: s2.map(step),
                        }),
                    }
                }),
                on_topic: on_topic.map(|(similarity, threshold)| {
                    gauntlet_core::outcome::OnTopic {
                        similarity,
                        threshold,
                        off_topic: similarity < threshold,
                    }
                }),
                probability: probability.map(|(value, threshold, band, rules_agree)| {
                    gauntlet_core::outcome::RefusalProbability {
                        value,
                        threshold,
                        band,
                        rules_agree,
                    }
                }),
                categories,
            };
            let mut ours = b"[".to_vec();
            write_verdict(&mut ours, &v);
            let want = serde_json::to_vec(&v).unwrap();
            prop_assert_eq!(
                String::from_utf8(ours[1..].to_vec()).unwrap(),
                String::from_utf8(want).unwrap()
            );
        }
    }
}
