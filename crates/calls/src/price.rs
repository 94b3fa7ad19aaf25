//! Prices and cost: the dated price table (USD per 1M input/output tokens by model
//! name) and the cost of one role's token usage at its model's price, or why it has
//! none (offline model, usage not reported, no price). Shared by `gauntlet run`'s
//! usage metrics and the agent exam's per-tier cost.

use crate::cache::RoleUsage;
use gauntlet_models::Model;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The bundled price table.
pub const BUNDLED_PRICES: &str = include_str!("../../models/prices/prices-2026-11.json");
pub const BUNDLED_PRICES_NAME: &str = "prices-2026-11.json (bundled)";

/// USD per 1M tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
}

#[derive(Debug, Deserialize)]
struct PriceFile {
    version: String,
    date: String,
    currency: String,
    per_tokens: u64,
    /// Share taken off the price of calls sent through a provider's batch API, by
    /// provider (`openai`, `anthropic`); absent: no discount known.
    #[serde(default)]
    batch_discount: BTreeMap<String, f64>,
    models: BTreeMap<String, Price>,
    #[serde(rename = "_comment", default)]
    _comment: Option<String>,
}

/// A dated, versioned price table: USD per 1M input/output tokens by model name.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable {
    pub version: String,
    pub date: String,
    /// Where it came from (the bundled name or a path), for N/A reasons.
    pub source: String,
    pub models: BTreeMap<String, Price>,
    /// Share taken off batched calls' price, by provider (both list 50%).
    pub batch_discount: BTreeMap<String, f64>,
}

/// Why a price table could not be used; every message names the table (its path or
/// the bundled name).
#[derive(Debug, thiserror::Error)]
pub enum PriceTableError {
    /// The file could not be read.
    #[error("cannot read price table {}: {cause}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        cause: std::io::Error,
    },
    /// Not the JSON of a price table.
    #[error("price table {table} is invalid: {cause}")]
    Invalid {
        table: String,
        #[source]
        cause: serde_json::Error,
    },
    /// Prices in another currency or per another number of tokens.
    #[error(
        "price table {table}: expected currency USD per 1000000 tokens, got {currency} per {per_tokens}"
    )]
    Unit {
        table: String,
        currency: String,
        per_tokens: u64,
    },
    /// A model's input or output price is negative (or not a number).
    #[error("price table {table}: negative price for `{model}`")]
    NegativePrice { table: String, model: String },
    /// A provider's batch discount is not a share between 0 and 1.
    #[error(
        "price table {table}: batch_discount for `{provider}` is {discount}; give a share between 0 and 1 (0.5 = half price)"
    )]
    BatchDiscount {
        table: String,
        provider: String,
        discount: f64,
    },
}

impl PriceTable {
    pub fn parse(text: &str, source: &str) -> Result<PriceTable, PriceTableError> {
        let table = || source.to_string();
        let f: PriceFile =
            serde_json::from_str(text).map_err(|cause| PriceTableError::Invalid {
                table: table(),
                cause,
            })?;
        if f.currency != "USD" || f.per_tokens != 1_000_000 {
            return Err(PriceTableError::Unit {
                table: table(),
                currency: f.currency,
                per_tokens: f.per_tokens,
            });
        }
        if let Some((m, _)) = f
            .models
            .iter()
            .find(|(_, p)| !(p.input >= 0.0 && p.output >= 0.0))
        {
            return Err(PriceTableError::NegativePrice {
                table: table(),
                model: m.clone(),
            });
        }
        if let Some((p, d)) = f
            .batch_discount
            .iter()
            .find(|(_, d)| !(0.0..=1.0).contains(*d))
        {
            return Err(PriceTableError::BatchDiscount {
                table: table(),
                provider: p.clone(),
                discount: *d,
            });
        }
        Ok(PriceTable {
            version: f.version,
            date: f.date,
            source: source.to_string(),
            models: f.models,
            batch_discount: f.batch_discount,
        })
    }
    pub fn bundled() -> PriceTable {
        Self::parse(BUNDLED_PRICES, BUNDLED_PRICES_NAME).expect("the bundled price table parses")
    }
    pub fn load(path: &Path) -> Result<PriceTable, PriceTableError> {
        let text =
            gauntlet_core::files::read_to_string(path, gauntlet_core::files::Kind::PRICE_TABLE)
                .map_err(|e| PriceTableError::Read {
                    path: path.to_path_buf(),
                    cause: e.into_io(),
                })?;
        Self::parse(&text, &path.display().to_string())
    }
    /// Human-readable identity, e.g. `2026-11 (2026-11-01, prices-2026-11.json (bundled))`.
    pub fn describe(&self) -> String {
        format!("{} ({}, {})", self.version, self.date, self.source)
    }
}

/// The factor a batch-mode model's list price is multiplied by (`1 - discount` of its
/// provider), or why there is none. `Ok(1.0)` for a model that does not batch.
pub fn batch_factor(model: &dyn Model, table: &PriceTable) -> Result<f64, Unpriced> {
    let Some(api) = model.batch_api() else {
        return Ok(1.0);
    };
    let provider = api.provider();
    table
        .batch_discount
        .get(provider)
        .map(|d| 1.0 - d)
        .ok_or_else(|| Unpriced::NoBatchDiscount {
            table: table.describe(),
            provider: provider.to_string(),
        })
}

/// The model name a spec sends (its `model` param), else the plugin name.
pub fn model_name(m: &dyn Model) -> String {
    m.spec()
        .params
        .str("model")
        .map_or_else(|| m.spec().name.clone(), str::to_string)
}

/// Why a slot's (or a batched model's) calls have no cost: the N/A reason of a cost
/// metric. `slot` is the role (`target`, `attacker`, …); `table` is the price table's
/// [`PriceTable::describe`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unpriced {
    /// Calls were counted for a slot that has no model.
    #[error("{slot} calls without a model (internal error)")]
    NoModel { slot: String },
    /// The model runs offline: no tokens, no price.
    #[error("{slot} model `{label}` is offline: it has no tokens and no price")]
    Offline { slot: String, label: String },
    /// Some calls came back without token usage.
    #[error("{slot} model `{model}` reported no usage on {missing} of {calls} call(s)")]
    NoUsage {
        slot: String,
        model: String,
        missing: u64,
        calls: u64,
    },
    /// The price table has no price for the model.
    #[error("no price for {slot} model `{model}` in price table {table}")]
    NoPrice {
        slot: String,
        model: String,
        table: String,
    },
    /// Replies are scripted by the harness (the agent exam's golden backend): no model
    /// is called, so nothing is paid.
    #[error("{backend} backend: scripted replies, nothing is paid")]
    Scripted { backend: &'static str },
    /// The price table has no batch discount for a batching model's provider.
    #[error("price table {table} has no batch_discount for provider `{provider}`")]
    NoBatchDiscount { table: String, provider: String },
}

/// The cost of one slot, or why it has none.
pub fn slot_cost(
    slot: &str,
    u: &RoleUsage,
    model: Option<&dyn Model>,
    table: &PriceTable,
) -> Result<f64, Unpriced> {
    if u.calls == 0 {
        return Ok(0.0);
    }
    let slot = slot.to_string();
    let Some(model) = model else {
        return Err(Unpriced::NoModel { slot });
    };
    let name = model_name(model);
    if model.offline() {
        return Err(Unpriced::Offline {
            slot,
            label: model.label(),
        });
    }
    if u.calls_with_usage < u.calls {
        return Err(Unpriced::NoUsage {
            slot,
            model: name,
            missing: u.calls - u.calls_with_usage,
            calls: u.calls,
        });
    }
    let Some(p) = table.models.get(&name) else {
        return Err(Unpriced::NoPrice {
            slot,
            model: name,
            table: table.describe(),
        });
    };
    Ok((u.input_tokens as f64 * p.input + u.output_tokens as f64 * p.output) / 1e6)
}

/// Assumed input tokens per call on top of the longest prompt (scaffolds, grader
/// instructions, attacker history), in the upper-bound estimates (`--estimate`).
pub const INPUT_ALLOWANCE: u64 = 2048;
