//! Provider batch APIs: the same requests a live target sends one by one, submitted as
//! one batch at half the price, with the provider's own queueing.
//!
//! A live target built with `batch: true` offers a [`BatchApi`] through
//! [`crate::Model::batch_api`]: build a request's wire body, submit many bodies under
//! their `custom_id`s as one batch, poll it, and stream its results line by line. Which
//! calls go into a batch, journaling the batch id, re-attaching after a kill and
//! resubmitting what expired is the call layer's job (`gauntlet-calls`' `batch.rs`); this
//! module only speaks the providers' formats:
//!
//! * [`openai`]: OpenAI's Batch API (`/v1/files` upload with `purpose=batch`,
//!   `/v1/batches`, output and error files);
//! * [`anthropic`]: Anthropic's Message Batches API (`/v1/messages/batches`, the
//!   `results_url` JSONL).
//!
//! Result files are untrusted input: they are streamed one line at a time (memory is
//! bounded by the longest line, not the file), and every line that cannot be read is
//! reported naming the batch, the file, the line number and what was wrong.

pub mod anthropic;
mod api;
pub mod openai;

pub use api::{
    BATCH_PARAMS, BadLine, BatchApi, BatchOptions, Ingested, LineError, MAX_LINE, Outcome,
    ParsedLine, Polled, ResultError,
};
pub(crate) use api::{custom_id, line_json, stream_lines};
