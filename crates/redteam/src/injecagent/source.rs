//! `injecagent`: the scenario source of InjecAgent's published test cases.
//!
//! The files are read from `data` (a directory URL): by default the repository's
//! `data/` at the pinned commit, downloaded only with `allow_download: true` (https,
//! the strict fetch policy) and cached by content like every public set; or a local
//! copy (`file://dir`, relative to the config). Every file is checked against its
//! sha256 before it is parsed: the published pins below unless `sha256` gives another
//! (`{file name: hex}`, for a copy you reviewed).
//!
//! `setting` picks `base` or `enhanced`; `attack_types` direct harm (`dh`), data
//! stealing (`ds`) or both. One behavior per case, ids `dh-0001`… / `ds-0001`… in file
//! order, category the case's `Attack Type`, the case attached for the `injecagent`
//! injection. The set's version is `injecagent-<setting>@<digest of the files' sha256>`
//! with the subset (`+dh`, `+limitN`) and a changed user identity appended.

use super::data::{self, Responses};
use super::{Case, Env};
use crate::datasets::{Dataset, DatasetError, apply_limit};
use gauntlet_core::behavior::{Behavior, CasePayload, Expected};
use gauntlet_core::hash::HashWriter;
use gauntlet_core::outcome::InjecAgentAttack;
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_fetch::{FetchOptions, FetchRequest, fetch};
use std::path::Path;
use std::sync::Arc;

/// The repository commit the published files are pinned at (main, 2024-07-02).
pub const COMMIT: &str = "f19c9f2c79a41046eb13c03c51a24c567a8ffa07";

/// The published `data/` directory at [`COMMIT`].
pub const DATA_URL: &str = "https://raw.githubusercontent.com/uiuc-kang-lab/InjecAgent/f19c9f2c79a41046eb13c03c51a24c567a8ffa07/data";

/// The sha256 of every file read, at [`COMMIT`].
pub const PINS: &[(&str, &str)] = &[
    (
        "tools.json",
        "e21a8f70b1d5de4677d6d52642936a322655d79b17a72c84f600550384083a1e",
    ),
    (
        "attacker_simulated_responses.json",
        "b1da2e1fb75f266c069b832fef6738c295f01d8962fae15bdac9ff6625e5594e",
    ),
    (
        "test_cases_dh_base.json",
        "0a8186468d21389af432e8c7b399ae42264d1b93a07b65c7a489468508604305",
    ),
    (
        "test_cases_ds_base.json",
        "4daab35c62a3845e8b9400f4dca58b9c9f37e57cd33b2337552557fbb26282e9",
    ),
    (
        "test_cases_dh_enhanced.json",
        "885602716b72c18af80695ce6c2e1f242fa03163bc90b0788b0c5e4ab6216d50",
    ),
    (
        "test_cases_ds_enhanced.json",
        "7bc510868df032511053fc40e8470e68a041fb7148d055112093594bf73ab0ce",
    ),
];

/// The user the benchmark's environment is set up for (its cases address them).
pub const USER_NAME: &str = "John Doe";
pub const USER_EMAIL: &str = "john.doe@gmail.com";

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Scenario,
    name: "injecagent",
    doc: "InjecAgent's published test cases (direct harm, data stealing; base or enhanced), sha256-pinned",
    params: &[
        ParamSpec {
            name: "setting",
            kind: ParamKind::Enum(&["base", "enhanced"]),
            default: DefaultValue::Str("base"),
            doc: "base: the attacker instruction as is; enhanced: prefixed with the paper's hacking prompt",
        },
        ParamSpec {
            name: "attack_types",
            kind: ParamKind::StrList,
            default: DefaultValue::StrList(&["dh", "ds"]),
            doc: "dh (direct harm) and/or ds (data stealing)",
        },
        ParamSpec {
            name: "data",
            kind: ParamKind::Str,
            default: DefaultValue::Str(DATA_URL),
            doc: "directory URL of the files: the published data/ at the pinned commit (downloaded \
                  only with allow_download: true), or file://dir (relative to the config)",
        },
        ParamSpec {
            name: "sha256",
            kind: ParamKind::StrMap,
            default: DefaultValue::Builtin,
            doc: "file name: sha256 of a copy you reviewed; files not listed must match the \
                  published pins",
        },
        ParamSpec {
            name: "allow_download",
            kind: ParamKind::Bool,
            default: DefaultValue::Bool(false),
            doc: "permit the https download (verified against sha256, cached under \
                  $GAUNTLET_CACHE_DIR or ~/.cache/gauntlet/datasets)",
        },
        ParamSpec {
            name: "limit",
            kind: ParamKind::Int {
                min: 1,
                max: 10_000_000,
            },
            default: DefaultValue::Absent,
            doc: "use only the first N cases (direct harm first; recorded in the version)",
        },
        ParamSpec {
            name: "user_name",
            kind: ParamKind::Str,
            default: DefaultValue::Str(USER_NAME),
            doc: "the user the agent works for, as the prompts' environment names them",
        },
        ParamSpec {
            name: "user_email",
            kind: ParamKind::Str,
            default: DefaultValue::Str(USER_EMAIL),
            doc: "that user's email address (the benchmark's cases use john.doe@gmail.com)",
        },
    ],
};

/// Fetches, verifies and reads one file.
fn read(
    spec: &PluginSpec,
    file: &str,
    base_dir: &Path,
    opts: &FetchOptions,
) -> Result<(Vec<u8>, String, String), DatasetError> {
    let dir = spec
        .params
        .str("data")
        .unwrap_or(DATA_URL)
        .trim_end_matches('/');
    let url = format!("{dir}/{file}");
    let given = spec
        .params
        .str_map("sha256")
        .and_then(|m| m.iter().find(|(k, _)| k == file))
        .map(|(_, v)| v.as_str());
    let pin = given.or_else(|| PINS.iter().find(|(f, _)| *f == file).map(|(_, p)| *p));
    if let Some(p) = given
        && let Err(m) = gauntlet_fetch::normalize_pin(p)
    {
        return Err(DatasetError::new(
            &url,
            format!("`sha256.{file}`: {m}; leave it out to use the published pin"),
        ));
    }
    let fetched = fetch(
        FetchRequest {
            url: &url,
            base_dir,
            sha256: pin,
            allow_download: spec.params.bool("allow_download").unwrap_or(false),
        },
        opts,
    )
    .map_err(DatasetError::from)?;
    let bytes = fetched
        .read_verified(opts.policy.max_bytes)
        .map_err(DatasetError::from)?;
    Ok((bytes, fetched.sha256, fetched.shown))
}

/// Loads the set (see the module docs).
pub fn load(
    spec: &PluginSpec,
    base_dir: &Path,
    opts: &FetchOptions,
) -> Result<Dataset, DatasetError> {
    let p = &spec.params;
    let setting: &'static str = match p.str("setting") {
        Some("enhanced") => "enhanced",
        _ => "base",
    };
    let name = format!("injecagent-{setting}");
    let mut types = Vec::new();
    for t in p
        .str_list("attack_types")
        .unwrap_or(&["dh".into(), "ds".into()])
    {
        let a = match t.trim().to_ascii_lowercase().as_str() {
            "dh" => InjecAgentAttack::Dh,
            "ds" => InjecAgentAttack::Ds,
            other => {
                return Err(DatasetError::new(
                    &name,
                    format!(
                        "`attack_types`: unknown type `{other}`; expected dh (direct harm) or ds (data stealing)"
                    ),
                ));
            }
        };
        if !types.contains(&a) {
            types.push(a);
        }
    }
    types.sort_by_key(|a| *a != InjecAgentAttack::Dh);
    if types.is_empty() {
        return Err(DatasetError::new(
            &name,
            "`attack_types` is empty; give dh, ds or both",
        ));
    }
    let mut digest = HashWriter::new();
    digest.field(b"injecagent-v1");
    let mut files = serde_json::Map::new();
    let mut note = |file: &str, sha: &str| {
        digest.field(file.as_bytes());
        digest.field(sha.as_bytes());
        files.insert(file.to_string(), sha.into());
    };
    let (tools_bytes, sha, shown) = read(spec, "tools.json", base_dir, opts)?;
    note("tools.json", &sha);
    let tools = data::parse_tools(&tools_bytes, &shown)?;
    drop(tools_bytes);
    let responses = if types.contains(&InjecAgentAttack::Ds) {
        let file = "attacker_simulated_responses.json";
        let (bytes, sha, shown) = read(spec, file, base_dir, opts)?;
        note(file, &sha);
        data::parse_responses(&bytes, &shown)?
    } else {
        Responses::default()
    };
    let mut cases = Vec::new();
    for &a in &types {
        let short = super::attack_str(a);
        let file = format!("test_cases_{short}_{setting}.json");
        let (bytes, sha, shown) = read(spec, &file, base_dir, opts)?;
        note(&file, &sha);
        let min = if a == InjecAgentAttack::Ds { 2 } else { 1 };
        for (i, c) in data::parse_cases(&bytes, &shown, &tools, min)?
            .into_iter()
            .enumerate()
        {
            cases.push((format!("{short}-{:04}", i + 1), a, c));
        }
    }
    let user_name = p.str("user_name").unwrap_or(USER_NAME).to_string();
    let user_email = p.str("user_email").unwrap_or(USER_EMAIL).to_string();
    let env = Arc::new(Env {
        tools,
        responses,
        user_name: user_name.clone(),
        user_email: user_email.clone(),
    });
    let behaviors: Vec<Behavior> = cases
        .into_iter()
        .map(|(id, attack, data)| Behavior {
            id,
            prompt: data.user_instruction.clone(),
            category: data.attack_type.clone(),
            expected: Expected::ShouldRefuse,
            reference_answer: None,
            target_secret: None,
            scenario: None,
            secret_cache: Default::default(),
            case: CasePayload::new(Arc::new(Case {
                attack,
                setting,
                data,
                env: env.clone(),
            })),
            bench_case: None,
        })
        .collect();
    let sha256 = digest.finish_hex();
    let (behaviors, limit) = apply_limit(behaviors, p.int("limit"));
    let mut version = format!("{name}@{}", &sha256[..12]);
    if types.len() == 1 {
        version.push('+');
        version.push_str(super::attack_str(types[0]));
    }
    if let Some(l) = limit {
        version.push_str(&format!("+limit{l}"));
    }
    if user_name != USER_NAME || user_email != USER_EMAIL {
        let mut h = HashWriter::new();
        h.field(user_name.as_bytes());
        h.field(user_email.as_bytes());
        version.push_str(&format!("+user={}", &h.finish_hex()[..8]));
    }
    // Whether every file read is the published one (its pin at the pinned commit).
    let published = files
        .iter()
        .all(|(f, sha)| PINS.iter().any(|(pf, pin)| pf == f && sha == pin));
    let provenance = serde_json::json!({
        "benchmark": "InjecAgent",
        "upstream": format!("uiuc-kang-lab/InjecAgent@{COMMIT}"),
        "setting": setting,
        "published_files": published,
        "files": files,
    });
    Ok(Dataset {
        name,
        version,
        sha256,
        behaviors,
        provenance: Some(provenance),
    })
}
