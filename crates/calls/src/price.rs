//! Prices and cost: the dated price table (USD per 1M input/output tokens by model
//! name) and the cost of one role's token usage at its model's price, or why it has
//! none (offline model, usage not reported, no price). Shared by `gauntlet run`'s
//! usage metrics and the agent exam's per-tier cost.

use crate::cache::RoleUsage;
use gauntlet_models::Model;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

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

impl PriceTable {
    pub fn parse(text: &str, source: &str) -> Result<PriceTable, String> {
        let f: PriceFile = serde_json::from_str(text)
            .map_err(|e| format!("price table {source} is invalid: {e}"))?;
        if f.currency != "USD" || f.per_tokens != 1_000_000 {
            return Err(format!(
                "price table {source}: expected currency USD per 1000000 tokens, got {} per {}",
                f.currency, f.per_tokens
            ));
        }
        if let Some((m, _)) = f
            .models
            .iter()
            .find(|(_, p)| !(p.input >= 0.0 && p.output >= 0.0))
        {
            return Err(format!("price table {source}: negative price for `{m}`"));
        }
        if let Some((p, d)) = f
            .batch_discount
            .iter()
            .find(|(_, d)| !(0.0..=1.0).contains(*d))
        {
            return Err(format!(
                "price table {source}: batch_discount for `{p}` is {d}; give a share between 0 and 1 (0.5 = half price)"
            ));
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
    pub fn load(path: &Path) -> Result<PriceTable, String> {
        let text =
            gauntlet_core::files::read_to_string(path, gauntlet_core::files::Kind::PRICE_TABLE)
                .map_err(|e| {
                    format!(
                        "cannot read price table {}: {}",
                        path.display(),
                        e.into_io()
                    )
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
pub fn batch_factor(model: &dyn Model, table: &PriceTable) -> Result<f64, String> {
    let Some(api) = model.batch_api() else {
        return Ok(1.0);
    };
    let provider = api.provider();
    table
        .batch_discount
        .get(provider)
        .map(|d| 1.0 - d)
        .ok_or_else(|| {
            format!(
                "price table {} has no batch_discount for provider `{provider}`",
                table.describe()
            )
        })
}

/// The model name a spec sends (its `model` param), else the plugin name.
pub fn model_name(m: &dyn Model) -> String {
    m.spec()
        .params
        .str("model")
        .map_or_else(|| m.spec().name.clone(), str::to_string)
}

/// The cost of one slot, or why it has none.
pub fn slot_cost(
    slot: &str,
    u: &RoleUsage,
    model: Option<&dyn Model>,
    table: &PriceTable,
) -> Result<f64, String> {
    if u.calls == 0 {
        return Ok(0.0);
    }
    let Some(model) = model else {
        return Err(format!("{slot} calls without a model (internal error)"));
    };
    let name = model_name(model);
    if model.offline() {
        return Err(format!(
            "{slot} model `{}` is offline: it has no tokens and no price",
            model.label()
        ));
    }
    if u.calls_with_usage < u.calls {
        return Err(format!(
            "{slot} model `{name}` reported no usage on {} of {} call(s)",
            u.calls - u.calls_with_usage,
            u.calls
        ));
    }
    let Some(p) = table.models.get(&name) else {
        return Err(format!(
            "no price for {slot} model `{name}` in price table {}",
            table.describe()
        ));
    };
    Ok((u.input_tokens as f64 * p.input + u.output_tokens as f64 * p.output) / 1e6)
}

/// Assumed input tokens per call on top of the longest prompt (scaffolds, grader
/// instructions, attacker history), in the upper-bound estimates (`--estimate`).
pub const INPUT_ALLOWANCE: u64 = 2048;
