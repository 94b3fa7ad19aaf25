//! The server's batches and uploaded files: what the batch endpoints create, poll and
//! cancel, and the log of every batch created.

use crate::reply::Reply;
use crate::script::{Api, Damage};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One batch as created: the log entry tests read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    pub id: String,
    pub api: Api,
    /// 1-based creation order.
    pub n: u64,
    /// The custom ids it carried, in submission order.
    pub custom_ids: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum End {
    Completed,
    Expired(u64),
    Cancelled(u64),
}

pub(crate) struct Batch {
    pub(crate) api: Api,
    pub(crate) n: u64,
    pub(crate) input_file_id: Option<String>,
    pub(crate) polls: u64,
    pub(crate) slow_polls: u64,
    pub(crate) end: End,
    pub(crate) failed: Option<String>,
    pub(crate) cancel_requested: bool,
    /// Per request in submission order: its custom id and, when it ran, its answer.
    pub(crate) results: Vec<(String, Option<Reply>)>,
    pub(crate) damage: Vec<(u64, Damage)>,
    /// OpenAI: the output and error file ids once the batch has ended.
    pub(crate) files: Option<(Option<String>, Option<String>)>,
}

/// The server's batches and uploaded files.
#[derive(Default)]
pub(crate) struct Store {
    pub(crate) files: BTreeMap<String, String>,
    pub(crate) batches: BTreeMap<String, Batch>,
    pub(crate) created: u64,
    pub(crate) log: Vec<BatchRecord>,
}

impl Store {
    /// The batch `id` of `api` (see [`no_batch`] for the reply when there is none).
    pub(crate) fn batch(&mut self, api: Api, id: &str) -> Option<&mut Batch> {
        self.batches.get_mut(id).filter(|b| b.api == api)
    }
}
