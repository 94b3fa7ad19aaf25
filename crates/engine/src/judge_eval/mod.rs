//! `gauntlet judge-eval`: scores judges against human-labelled replies.
//!
//! A judge is a measuring instrument; this is its calibration. Each labelled reply
//! ([`labelled`]) becomes a one-attempt conversation (the prompt, then the reply) that
//! every judge scores exactly as it would in a run; the judge's `refused` decision is
//! compared with the human label (positive = refusal; partial refusals count as refusals
//! unless told otherwise) into a [`Confusion`](gauntlet_core::judge_eval::Confusion) per judge, overall and per source (the
//! model that wrote the replies). A verdict that is an error (an unreadable grade, a
//! failed grader call) is its own outcome: excluded from every figure and counted.
//!
//! Graders (LLM judges such as `rubric`) are called through the same cache and journal
//! as a run, in the output directory (`journal.jsonl`): repeating an evaluation makes no
//! new call, an interrupted one resumes, and `--max-queries` bounds what it may spend
//! (when it runs out the report says `partial: budget`). Calls are keyed by the labelled
//! file's sha256, the row, and the judge's resolved spec.
//!
//! Output (in `--out`): `judge_eval.json` ([`JudgeEvalReport`](gauntlet_core::judge_eval::JudgeEvalReport)), `report.md` (the
//! report crate's), and on request a judge card ([`JudgeCard`](gauntlet_core::judge_eval::JudgeCard)).

mod eval;
pub mod labelled;

pub use eval::{
    EvalOptions, JSON_FILE, JudgeCardError, JudgeEvalError, MARKDOWN_FILE, WriteError, card,
    evaluate, write_card,
};
