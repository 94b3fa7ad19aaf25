//! Shared machinery of the public benchmark sets (`advbench`, `harmbench`,
//! `jbb_behaviors`, `xstest`, `or_bench`, `strongreject`, `ailuminate`,
//! `simple_safety_tests`, `cyberseceval_frr`, `cyberseceval_interpreter`): common
//! params, fetching through `gauntlet-fetch` (sha256 verified before parsing), real CSV
//! parsing (quoted fields, embedded newlines, a UTF-8 BOM) or a JSON array of objects,
//! column checks, row-numbered ids, the category filter, a seeded `sample` (optionally
//! stratified by category), `limit`, the `name` label (one set listed twice) and the
//! version string.
//!
//! Each set's file only declares its layout and how a row maps to a behavior.

use super::{Dataset, DatasetError};
use gauntlet_core::behavior::{Behavior, Expected};
use gauntlet_core::params::{DefaultValue, ParamKind, ParamSpec, PluginSpec};
use gauntlet_fetch::{FetchOptions, FetchRequest, fetch};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// The `url` param of a set with a canonical commit-pinned source (its published pin is
/// the `sha256` default): the source is the default, so a config may name only the set.
pub(crate) const fn url_param(canonical: &'static str) -> ParamSpec {
    ParamSpec {
        name: "url",
        kind: ParamKind::Str,
        default: DefaultValue::Str(canonical),
        doc: "https:// URL of the file (downloaded only with allow_download: true), or file://path \
              (relative to the config's directory); default: the set's canonical file at a pinned commit",
    }
}
/// The `sample` param shared by every public set: a seeded random subset.
pub(crate) const SAMPLE_PARAM: ParamSpec = ParamSpec {
    name: "sample",
    kind: ParamKind::Int {
        min: 1,
        max: 10_000_000,
    },
    default: DefaultValue::Absent,
    doc: "keep N behaviors drawn at random (seeded by `seed`; kept in file order; recorded in the dataset version), after `category` and before `limit`",
};
/// The `stratify` param: sample within each category in proportion to its size.
pub(crate) const STRATIFY_PARAM: ParamSpec = ParamSpec {
    name: "stratify",
    kind: ParamKind::Enum(&["category"]),
    default: DefaultValue::Absent,
    doc: "with `sample`: draw from each category in proportion to its size (largest remainder), so every type is represented",
};
/// The seed of `sample`.
pub(crate) const SEED_PARAM: ParamSpec = ParamSpec {
    name: "seed",
    kind: ParamKind::Int {
        min: 0,
        max: i64::MAX,
    },
    default: DefaultValue::Int(0),
    doc: "seed of `sample` (a different seed draws a different subset; recorded in the version when not 0)",
};
/// The `name` param: the dataset's label, so one set can be listed twice.
pub(crate) const NAME_PARAM: ParamSpec = ParamSpec {
    name: "name",
    kind: ParamKind::Str,
    default: DefaultValue::Absent,
    doc: "the dataset's label in cells and reports (default: the set's name); give two entries of one set different names to list it twice (e.g. two samples)",
};
/// A seeded subset of `n` of `behaviors` (all of them when `n` is at least their number),
/// drawn from each category in proportion to its size when `stratify`; the chosen rows
/// keep their file order. Deterministic in (`seed`, the set's name, the rows).
pub(crate) fn sample(
    behaviors: Vec<Behavior>,
    n: usize,
    stratify: bool,
    seed: u64,
    set: &str,
) -> Vec<Behavior> {
    use rand::seq::SliceRandom;
    if n >= behaviors.len() {
        return behaviors;
    }
    // Groups in order of first appearance: the whole set, or one per category.
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, b) in behaviors.iter().enumerate() {
        let key = if stratify {
            b.category.to_lowercase()
        } else {
            String::new()
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    // Quotas by largest remainder: floor shares, then the largest fractions (ties: first).
    let total = behaviors.len();
    let mut quota: Vec<usize> = groups.iter().map(|(_, v)| v.len() * n / total).collect();
    let mut left = n - quota.iter().sum::<usize>();
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by_key(|&g| std::cmp::Reverse((groups[g].1.len() * n) % total));
    for g in order {
        if left == 0 {
            break;
        }
        if quota[g] < groups[g].1.len() {
            quota[g] += 1;
            left -= 1;
        }
    }
    let mut keep = vec![false; total];
    for ((key, idx), q) in groups.iter().zip(quota) {
        let mut idx = idx.clone();
        let mut rng = gauntlet_core::rng::rng_for(seed, &["dataset-sample", set, key]);
        idx.shuffle(&mut rng);
        for i in idx.into_iter().take(q) {
            keep[i] = true;
        }
    }
    behaviors
        .into_iter()
        .zip(keep)
        .filter_map(|(b, k)| k.then_some(b))
        .collect()
}

/// The `allow_download` param shared by every public set.
pub(crate) const ALLOW_DOWNLOAD_PARAM: ParamSpec = ParamSpec {
    name: "allow_download",
    kind: ParamKind::Bool,
    default: DefaultValue::Bool(false),
    doc: "permit the https download (verified against sha256, cached under $GAUNTLET_CACHE_DIR or ~/.cache/gauntlet/datasets)",
};
/// The `limit` param shared by every public set.
pub(crate) const LIMIT_PARAM: ParamSpec = ParamSpec {
    name: "limit",
    kind: ParamKind::Int {
        min: 1,
        max: 10_000_000,
    },
    default: DefaultValue::Absent,
    doc: "use only the first N behaviors after filtering (recorded in the dataset version)",
};
/// The `category` filter param of sets that have a category column.
pub(crate) const CATEGORY_PARAM: ParamSpec = ParamSpec {
    name: "category",
    kind: ParamKind::StrList,
    default: DefaultValue::Absent,
    doc: "keep only behaviors whose category is one of these (case-insensitive; recorded in the dataset version)",
};

/// A `sha256` param whose default is the published pin.
pub(crate) const fn pinned_sha_param(doc: &'static str) -> ParamSpec {
    ParamSpec {
        name: "sha256",
        kind: ParamKind::Str,
        default: DefaultValue::Builtin,
        doc,
    }
}

/// One row's mapping to a behavior.
pub(crate) struct Item {
    pub prompt: String,
    pub category: String,
    pub expected: Expected,
}

/// How a set's file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// CSV with a header row; the columns are header names.
    Csv,
    /// A JSON array of objects; the columns are keys every object has. A string value is
    /// used as it is, a number or boolean as its JSON text, an array of those as its
    /// items joined by `, `, and `null` as empty.
    JsonArray,
}

/// A set's file layout.
pub(crate) struct Layout {
    /// Plugin name: dataset name, id prefix and version prefix.
    pub name: &'static str,
    /// CSV or JSON.
    pub format: Format,
    /// The prompt column (must be non-empty on every row).
    pub prompt: &'static str,
    /// Every column the mapping reads, the prompt column included.
    pub columns: &'static [&'static str],
    /// The published pin, used when the user gives no `sha256`; `None` = the user must pin.
    pub pin: Option<&'static str>,
}

/// A parsed row, addressed by column name.
pub(crate) struct Row<'a> {
    record: &'a csv::StringRecord,
    index: &'a HashMap<&'static str, usize>,
}

impl Row<'_> {
    /// The value of a declared column.
    pub(crate) fn get(&self, column: &'static str) -> &str {
        self.index
            .get(column)
            .and_then(|&i| self.record.get(i))
            .unwrap_or("")
    }
}

/// Why a data row makes no behavior: a set's own rule on its columns, broken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RowError {
    /// HarmBench: a `contextual` row without its context.
    #[error("a contextual behavior with an empty `ContextString`")]
    EmptyContext,
    /// HarmBench: the `FunctionalCategory` given.
    #[error("unknown FunctionalCategory {0:?} (expected standard, contextual or copyright)")]
    FunctionalCategory(String),
    /// XSTest: no `type`.
    #[error("empty `type` (needed to tell should_refuse from should_comply)")]
    EmptyType,
    /// A field that says which way the row is labelled holds neither true nor false.
    #[error(
        "`{field}` is {value:?}, expected true or false (it tells should_refuse from should_comply)"
    )]
    NotBoolean { field: &'static str, value: String },
}

/// What a row becomes: a behavior, or nothing (rows a set leaves out by design).
pub(crate) type RowMap<'m> = dyn Fn(&Row<'_>) -> Result<Option<Item>, RowError> + 'm;

/// Parses a set's bytes into behaviors with ids `<name>-<row:04>`.
pub(crate) fn parse(
    bytes: &[u8],
    shown: &str,
    layout: &Layout,
    map: &RowMap<'_>,
) -> Result<Vec<Behavior>, DatasetError> {
    match layout.format {
        Format::Csv => parse_csv(bytes, shown, layout, map),
        Format::JsonArray => parse_json(bytes, shown, layout, map),
    }
}

/// One JSON value as the text of a column (see [`Format::JsonArray`]); `None` for an
/// object or a nested array.
fn json_text(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => Some(String::new()),
        Value::Bool(_) | Value::Number(_) => Some(v.to_string()),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::Array(_) | Value::Object(_) => None,
                other => json_text(other),
            })
            .collect::<Option<Vec<_>>>()
            .map(|parts| parts.join(", ")),
        Value::Object(_) => None,
    }
}

/// Parses a JSON array of objects (see [`Format::JsonArray`]).
fn parse_json(
    bytes: &[u8],
    shown: &str,
    layout: &Layout,
    map: &RowMap<'_>,
) -> Result<Vec<Behavior>, DatasetError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let items: Vec<serde_json::Value> = serde_json::from_slice(bytes).map_err(|e| {
        DatasetError::new(
            shown,
            format!(
                "not a JSON array of objects for the `{}` format: {e} (is this the right file for this dataset?)",
                layout.name
            ),
        )
    })?;
    if items.is_empty() {
        return Err(DatasetError::new(shown, "the JSON array has no items"));
    }
    let index: HashMap<&'static str, usize> = layout
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| (*c, i))
        .collect();
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let number = i + 1;
        let at = |m: String| DatasetError::new(shown, format!("item {number}: {m}"));
        let Some(obj) = item.as_object() else {
            return Err(at(format!(
                "expected an object with the fields {}, found {}",
                field_list(layout.columns),
                json_kind(item)
            )));
        };
        let mut record = csv::StringRecord::new();
        for &col in layout.columns {
            let Some(v) = obj.get(col) else {
                return Err(at(format!(
                    "no `{col}` field for the `{}` format; expected: {}",
                    layout.name,
                    field_list(layout.columns)
                )));
            };
            let Some(text) = json_text(v) else {
                return Err(at(format!(
                    "field `{col}` is {}, expected text, a number, a boolean or a list of those",
                    json_kind(v)
                )));
            };
            record.push_field(&text);
        }
        let row = Row {
            record: &record,
            index: &index,
        };
        if row.get(layout.prompt).trim().is_empty() {
            return Err(at(format!("empty `{}` (the prompt field)", layout.prompt)));
        }
        if let Some(item) = map(&row).map_err(|m| at(m.to_string()))? {
            out.push(behavior(
                format!("{}-{number:04}", layout.name),
                item.prompt,
                item.category,
                item.expected,
            ));
        }
    }
    Ok(out)
}

fn field_list(cols: &[&str]) -> String {
    cols.iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Parses CSV bytes.
fn parse_csv(
    bytes: &[u8],
    shown: &str,
    layout: &Layout,
    map: &RowMap<'_>,
) -> Result<Vec<Behavior>, DatasetError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(bytes);
    let headers = rdr
        .headers()
        .map_err(|e| {
            DatasetError::new(
                shown,
                format!("cannot read the header row: {}", csv_error(&e)),
            )
        })?
        .clone();
    let found: Vec<String> = headers.iter().map(|h| h.trim().to_string()).collect();
    let mut index = HashMap::new();
    let mut missing = Vec::new();
    for &col in layout.columns {
        // Exact name first, then case-insensitively (mirrors sometimes change case).
        let hits: Vec<usize> = match found.iter().position(|h| h == col) {
            Some(i) => vec![i],
            None => found
                .iter()
                .enumerate()
                .filter(|(_, h)| h.eq_ignore_ascii_case(col))
                .map(|(i, _)| i)
                .collect(),
        };
        match hits.as_slice() {
            [i] => {
                index.insert(col, *i);
            }
            [] => missing.push(col),
            _ => {
                return Err(DatasetError::new(
                    shown,
                    format!("column `{col}` appears more than once in the header"),
                ));
            }
        }
    }
    if !missing.is_empty() {
        let list = |v: &[&str]| {
            v.iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let found_refs: Vec<&str> = found.iter().map(String::as_str).collect();
        return Err(DatasetError::new(
            shown,
            format!(
                "missing column(s) {} for the `{}` format; found columns: {}; expected: {} \
                 (is this the right file for this dataset?)",
                list(&missing),
                layout.name,
                if found_refs.is_empty() {
                    "none (empty file)".to_string()
                } else {
                    list(&found_refs)
                },
                list(layout.columns)
            ),
        ));
    }
    let mut out = Vec::new();
    let mut record = csv::StringRecord::new();
    let mut number = 0usize;
    loop {
        match rdr.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                return Err(DatasetError::new(
                    shown,
                    format!("data row {}: {}", number + 1, csv_error(&e)),
                ));
            }
        }
        number += 1;
        let line = record.position().map(|p| p.line()).unwrap_or(0);
        let row = Row {
            record: &record,
            index: &index,
        };
        if row.get(layout.prompt).trim().is_empty() {
            return Err(DatasetError::new(
                shown,
                format!(
                    "data row {number} (line {line}) has an empty `{}` (the prompt column)",
                    layout.prompt
                ),
            ));
        }
        let item = map(&row).map_err(|m| {
            DatasetError::new(shown, format!("data row {number} (line {line}): {m}"))
        })?;
        if let Some(item) = item {
            out.push(behavior(
                format!("{}-{number:04}", layout.name),
                item.prompt,
                item.category,
                item.expected,
            ));
        }
    }
    if number == 0 {
        return Err(DatasetError::new(
            shown,
            "the file has a header but no data rows",
        ));
    }
    Ok(out)
}

fn csv_error(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            pos,
            expected_len,
            len,
        } => format!(
            "{} has {len} fields, expected {expected_len} like the header (an unbalanced quote?)",
            pos.as_ref()
                .map(|p| format!("line {}", p.line()))
                .unwrap_or_else(|| "a record".into())
        ),
        csv::ErrorKind::Utf8 { pos, err } => format!(
            "{}field {} is not valid UTF-8",
            pos.as_ref()
                .map(|p| format!("line {}: ", p.line()))
                .unwrap_or_default(),
            err.field() + 1
        ),
        _ => e.to_string(),
    }
}

/// Builds a behavior without naming every field of the struct.
fn behavior(id: String, prompt: String, category: String, expected: Expected) -> Behavior {
    serde_json::from_value(serde_json::json!({
        "id": id,
        "prompt": prompt,
        "category": category,
        "expected": expected,
    }))
    .expect("a behavior built from its own fields deserialises")
}

/// Extra subset markers a set adds to its version (e.g. HarmBench's `+contextual`).
pub(crate) type Markers = Vec<String>;

/// A plain public prompt list: every row one behavior, its prompt the layout's prompt
/// column, its category a column (trimmed) or the set's own name, one expectation for
/// every row. Such a set is its `Layout`, this and its params.
pub(crate) struct PromptList {
    pub layout: Layout,
    /// The category column; `None`: every behavior's category is the set's name.
    pub category: Option<&'static str>,
    pub expected: Expected,
}

impl PromptList {
    /// Loads the list `spec` describes through [`load`].
    pub(crate) fn load(
        &self,
        spec: &PluginSpec,
        base_dir: &Path,
        opts: &FetchOptions,
    ) -> Result<Dataset, DatasetError> {
        load(spec, base_dir, opts, &self.layout, Vec::new(), &|row| {
            Ok(Some(Item {
                prompt: row.get(self.layout.prompt).to_string(),
                category: match self.category {
                    Some(column) => row.get(column).trim().to_string(),
                    None => self.layout.name.to_string(),
                },
                expected: self.expected,
            }))
        })
    }
}

/// Fetches, verifies, parses, filters and limits one public set.
pub(crate) fn load(
    spec: &PluginSpec,
    base_dir: &Path,
    opts: &FetchOptions,
    layout: &Layout,
    markers: Markers,
    map: &RowMap<'_>,
) -> Result<Dataset, DatasetError> {
    let name = layout.name;
    let url = spec.params.str("url").unwrap_or_default();
    let pin = match (spec.params.str("sha256"), layout.pin) {
        (Some(p), _) => p,
        (None, Some(p)) => p,
        (None, None) => {
            return Err(DatasetError::new(
                name,
                "`sha256` is required: this set has no published pin; hash the file you \
                 reviewed (sha256sum FILE) and pass it as `sha256`",
            ));
        }
    };
    if let Err(m) = gauntlet_fetch::normalize_pin(pin) {
        let fix = match layout.pin {
            Some(published) => {
                format!("leave `sha256` out to use the published pin {published}")
            }
            None => "give the sha256 of the file you reviewed (sha256sum FILE)".to_string(),
        };
        return Err(DatasetError::new(name, format!("{m}; {fix}")));
    }
    let fetched = fetch(
        FetchRequest {
            url,
            base_dir,
            sha256: Some(pin),
            allow_download: spec.params.bool("allow_download").unwrap_or(false),
        },
        opts,
    )
    .map_err(DatasetError::from)?;
    // Parse exactly the verified bytes.
    let bytes = fetched
        .read_verified(opts.policy.max_bytes)
        .map_err(DatasetError::from)?;
    let mut behaviors = parse(&bytes, &fetched.shown, layout, map)?;
    let mut suffix = String::new();
    for m in markers {
        suffix.push('+');
        suffix.push_str(&m);
    }
    if let Some(wanted) = spec.params.str_list("category")
        && !wanted.is_empty()
    {
        let wanted: BTreeSet<String> = wanted.iter().map(|c| c.trim().to_lowercase()).collect();
        let available: BTreeSet<&str> = behaviors.iter().map(|b| b.category.as_str()).collect();
        let unknown: Vec<&String> = wanted
            .iter()
            .filter(|w| !available.iter().any(|a| a.to_lowercase() == **w))
            .collect();
        if !unknown.is_empty() {
            return Err(DatasetError::new(
                &fetched.shown,
                format!(
                    "unknown categor{} {:?}; the file has: {}",
                    if unknown.len() == 1 { "y" } else { "ies" },
                    unknown,
                    available.into_iter().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        behaviors.retain(|b| wanted.contains(&b.category.to_lowercase()));
        suffix.push_str("+category=");
        suffix.push_str(&wanted.into_iter().collect::<Vec<_>>().join(","));
    }
    if behaviors.is_empty() {
        return Err(DatasetError::new(
            &fetched.shown,
            "no behaviors left after filtering",
        ));
    }
    if let Some(n) = spec.params.int("sample")
        && (n as usize) < behaviors.len()
    {
        let stratify = spec.params.str("stratify") == Some("category");
        let seed = spec.params.int("seed").unwrap_or(0).max(0) as u64;
        behaviors = sample(behaviors, n as usize, stratify, seed, name);
        suffix.push_str(&format!("+sample{n}"));
        if stratify {
            suffix.push_str("+stratify=category");
        }
        if seed != 0 {
            suffix.push_str(&format!("+seed{seed}"));
        }
    }
    let (behaviors, limit) = super::apply_limit(behaviors, spec.params.int("limit"));
    let mut version = format!("{name}@{}{suffix}", &fetched.sha256[..12]);
    if let Some(l) = limit {
        version.push_str(&format!("+limit{l}"));
    }
    Ok(Dataset {
        name: spec.params.str("name").unwrap_or(name).to_string(),
        version,
        sha256: fetched.sha256,
        behaviors,
        provenance: None,
    })
}

#[cfg(test)]
pub(crate) mod test_util {
    //! Helpers for the loaders' tests: specs pointing at the shared fixtures.

    use gauntlet_core::params::{ParamValue, Params, PluginSpec};
    use std::path::{Path, PathBuf};

    /// `crates/redteam/tests/fixtures`.
    pub(crate) fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
    }

    /// The sha256 of a fixture.
    pub(crate) fn sha_of(file: &str) -> String {
        gauntlet_fetch::sha256_hex(&std::fs::read(fixtures().join(file)).unwrap())
    }

    /// A spec for plugin `name` reading `file://<file>` with its actual pin.
    pub(crate) fn spec(name: &str, file: &str, extra: &[(&str, ParamValue)]) -> PluginSpec {
        let mut all = vec![("sha256", ParamValue::Str(sha_of(file)))];
        all.extend(extra.iter().cloned());
        unpinned(name, file, &all)
    }

    /// A spec for plugin `name` reading `file://<file>` with no `sha256` param.
    pub(crate) fn unpinned(name: &str, file: &str, extra: &[(&str, ParamValue)]) -> PluginSpec {
        let mut p = Params::new();
        p.insert("url", ParamValue::Str(format!("file://{file}")));
        for (k, v) in extra {
            p.insert(k, v.clone());
        }
        PluginSpec {
            name: name.into(),
            params: p,
            loc: Default::default(),
            label: None,
        }
    }

    /// Offline options: strict policy, no cache.
    pub(crate) fn offline() -> gauntlet_fetch::FetchOptions {
        gauntlet_fetch::FetchOptions {
            policy: gauntlet_fetch::FetchPolicy::strict(),
            cache_dir: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYOUT: Layout = Layout {
        name: "t",
        format: Format::Csv,
        prompt: "prompt",
        columns: &["prompt", "kind"],
        pin: None,
    };

    fn map(r: &Row<'_>) -> Result<Option<Item>, RowError> {
        Ok(Some(Item {
            prompt: r.get("prompt").to_string(),
            category: r.get("kind").to_string(),
            expected: Expected::ShouldComply,
        }))
    }

    #[test]
    fn bom_quotes_and_embedded_newlines() {
        let csv = "\u{feff}prompt,kind\n\"Explain, in two lines,\nhow to pick a lock\",\"x \"\"y\"\"\"\nplain,z\n";
        let b = parse(csv.as_bytes(), "f.csv", &LAYOUT, &map).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].prompt, "Explain, in two lines,\nhow to pick a lock");
        assert_eq!(b[0].category, "x \"y\"");
        assert_eq!(b[0].id, "t-0001");
        assert_eq!(b[1].id, "t-0002");
    }

    #[test]
    fn missing_columns_name_file_found_and_expected() {
        let e = parse(b"goal,target\na,b\n", "dir/f.csv", &LAYOUT, &map).unwrap_err();
        assert_eq!(e.source_name, "dir/f.csv");
        for s in [
            "`prompt`",
            "`kind`",
            "found columns: `goal`, `target`",
            "expected: `prompt`, `kind`",
        ] {
            assert!(e.message.contains(s), "{s}: {e}");
        }
        let e = parse(b"", "f.csv", &LAYOUT, &map).unwrap_err();
        assert!(e.message.contains("none (empty file)"), "{e}");
    }

    #[test]
    fn empty_prompts_and_ragged_rows_name_the_row() {
        let e = parse(b"prompt,kind\na,b\n  ,c\n", "f.csv", &LAYOUT, &map).unwrap_err();
        assert!(
            e.message.contains("data row 2 (line 3)") && e.message.contains("empty `prompt`"),
            "{e}"
        );
        let e = parse(b"prompt,kind\na,b\nc\n", "f.csv", &LAYOUT, &map).unwrap_err();
        assert!(e.message.contains("line 3 has 1 fields, expected 2"), "{e}");
        let e = parse(b"prompt,kind\n", "f.csv", &LAYOUT, &map).unwrap_err();
        assert!(e.message.contains("no data rows"), "{e}");
        let e = parse(b"prompt,kind\n\xff\xfe,b\n", "f.csv", &LAYOUT, &map).unwrap_err();
        assert!(e.message.contains("UTF-8"), "{e}");
    }

    #[test]
    fn columns_match_case_insensitively_but_not_twice() {
        let b = parse(b"Prompt,KIND\na,b\n", "f.csv", &LAYOUT, &map).unwrap();
        assert_eq!(b[0].category, "b");
        let e = parse(b"Prompt,PROMPT,kind\na,b,c\n", "f.csv", &LAYOUT, &map).unwrap_err();
        assert!(e.message.contains("more than once"), "{e}");
    }

    const JSON: Layout = Layout {
        name: "t",
        format: Format::JsonArray,
        prompt: "prompt",
        columns: &["prompt", "kind"],
        pin: None,
    };

    #[test]
    fn json_items_map_strings_scalars_and_lists() {
        let json = br#"[{"prompt":"a","kind":["x","y"],"extra":{"k":1}},{"prompt":"b","kind":false},{"prompt":"c","kind":null},{"prompt":"d","kind":2.5}]"#;
        let b = parse(json, "f.json", &JSON, &map).unwrap();
        let got: Vec<(&str, &str, &str)> = b
            .iter()
            .map(|x| (x.id.as_str(), x.prompt.as_str(), x.category.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("t-0001", "a", "x, y"),
                ("t-0002", "b", "false"),
                ("t-0003", "c", ""),
                ("t-0004", "d", "2.5")
            ]
        );
    }

    #[test]
    fn json_errors_name_the_item_and_the_fix() {
        let e = parse(b"{\"prompt\":\"a\"}", "f.json", &JSON, &map).unwrap_err();
        assert!(
            e.message
                .contains("not a JSON array of objects for the `t` format"),
            "{e}"
        );
        let e = parse(b"[]", "f.json", &JSON, &map).unwrap_err();
        assert!(e.message.contains("no items"), "{e}");
        let e = parse(br#"[{"prompt":"a","kind":"k"},7]"#, "f.json", &JSON, &map).unwrap_err();
        assert!(
            e.message.contains(
                "item 2: expected an object with the fields `prompt`, `kind`, found a number"
            ),
            "{e}"
        );
        let e = parse(br#"[{"prompt":"a"}]"#, "f.json", &JSON, &map).unwrap_err();
        assert!(e.message.contains("item 1: no `kind` field"), "{e}");
        let e = parse(br#"[{"prompt":" ","kind":"k"}]"#, "f.json", &JSON, &map).unwrap_err();
        assert!(e.message.contains("item 1: empty `prompt`"), "{e}");
        let e = parse(br#"[{"prompt":"a","kind":[["x"]]}]"#, "f.json", &JSON, &map).unwrap_err();
        assert!(e.message.contains("field `kind` is a list"), "{e}");
        assert_eq!(e.source_name, "f.json");
    }

    proptest::proptest! {
        /// Arbitrary bytes never panic the parser.
        #[test]
        fn parser_never_panics_on_bytes(s in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            let _ = parse(&s, "fuzz", &LAYOUT, &map);
        }

        /// CSV-ish text (quotes, commas, newlines, BOMs) never panics either, and every
        /// success has non-empty prompts and unique ids.
        #[test]
        fn parser_never_panics_on_csvish_text(s in "(\u{feff})?(prompt|kind|\"|,|\n|\r|a| |é)*") {
            if let Ok(b) = parse(s.as_bytes(), "fuzz", &LAYOUT, &map) {
                let ids: BTreeSet<&str> = b.iter().map(|x| x.id.as_str()).collect();
                proptest::prop_assert_eq!(ids.len(), b.len());
                proptest::prop_assert!(b.iter().all(|x| !x.prompt.trim().is_empty()));
            }
        }

        /// Arbitrary bytes never panic the JSON parser.
        #[test]
        fn json_parser_never_panics_on_bytes(s in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            let _ = parse(&s, "fuzz", &JSON, &map);
        }

        /// JSON-ish text (brackets, keys, scalars, nesting) never panics, and every
        /// success has one behavior per item with a non-empty prompt and unique ids.
        #[test]
        fn json_parser_never_panics_on_jsonish_text(
            s in r#"(\[|\]|\{|\}|"prompt"|"kind"|:|,|"a"|" "|1|true|null|\u{feff})*"#
        ) {
            if let Ok(b) = parse(s.as_bytes(), "fuzz", &JSON, &map) {
                let ids: BTreeSet<&str> = b.iter().map(|x| x.id.as_str()).collect();
                proptest::prop_assert_eq!(ids.len(), b.len());
                proptest::prop_assert!(b.iter().all(|x| !x.prompt.trim().is_empty()));
            }
        }
    }
}

#[cfg(test)]
mod sample_tests {
    use super::sample;
    use gauntlet_core::behavior::{Behavior, Expected};

    fn set() -> Vec<Behavior> {
        // 20 of type a, 6 of b, 4 of c, interleaved.
        (0..30)
            .map(|i| {
                let cat = if i % 5 == 0 {
                    "c"
                } else if i % 5 == 1 && i < 30 && i % 2 == 1 {
                    "b"
                } else {
                    "a"
                };
                let mut b: Behavior = serde_json::from_value(serde_json::json!({
                    "id": format!("x-{i:02}"), "prompt": format!("p{i}"), "category": cat,
                }))
                .unwrap();
                b.expected = Expected::ShouldComply;
                b
            })
            .collect()
    }

    #[test]
    fn samples_are_seeded_in_file_order_and_stratified_by_category() {
        let all = set();
        let count = |v: &[Behavior], c: &str| v.iter().filter(|b| b.category == c).count();
        let (na, nb, nc) = (count(&all, "a"), count(&all, "b"), count(&all, "c"));
        assert_eq!(na + nb + nc, 30);
        let s1 = sample(all.clone(), 10, true, 0, "xstest");
        assert_eq!(s1.len(), 10);
        // Proportional: each category's share within one of its exact quota.
        for (c, n) in [("a", na), ("b", nb), ("c", nc)] {
            let want = n as f64 * 10.0 / 30.0;
            assert!(
                (count(&s1, c) as f64 - want).abs() < 1.0,
                "{c}: {} vs {want}",
                count(&s1, c)
            );
        }
        // File order kept; the same seed draws the same rows, another seed others.
        let ids: Vec<&str> = s1.iter().map(|b| b.id.as_str()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        let again: Vec<String> = sample(all.clone(), 10, true, 0, "xstest")
            .into_iter()
            .map(|b| b.id)
            .collect();
        assert_eq!(ids, again);
        let other: Vec<String> = sample(all.clone(), 10, true, 7, "xstest")
            .into_iter()
            .map(|b| b.id)
            .collect();
        assert_ne!(ids, other);
        // Unstratified, and a sample as large as the set is the set.
        assert_eq!(sample(all.clone(), 10, false, 0, "xstest").len(), 10);
        assert_eq!(sample(all.clone(), 30, true, 0, "xstest").len(), 30);
    }
}
