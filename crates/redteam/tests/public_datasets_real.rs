//! The public sets that are fetched by pin, loaded from their real published files: a
//! config that names only the set resolves to its canonical URL and published sha256,
//! and the loader finds the file by that pin in `$GAUNTLET_PUBLIC_DATASETS_DIR` (filled
//! by `scripts/install-public-datasets.sh`, one file per sha256) with the network off.
//! Each set's size, its should_refuse / should_comply split and its categories are
//! checked against counts taken from the real files, so a changed pin, a changed
//! mapping or a changed file fails here. Without the directory the test skips loudly;
//! with `CI` set it fails, unless `.ci/run` recorded in `GAUNTLET_PUBLIC_DATASETS_SKIP`
//! why the files could not be downloaded (the publishers' files are on GitHub, which a
//! CI machine that reaches only package registries cannot fetch): then it skips loudly
//! with that reason.

use gauntlet_core::behavior::Expected;
use gauntlet_core::params::{Axis, PluginSpec, resolve_spec};
use gauntlet_fetch::{FetchOptions, FetchPolicy};
use gauntlet_redteam::datasets::{self, Dataset};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn files_dir() -> Option<PathBuf> {
    let why = match std::env::var_os("GAUNTLET_PUBLIC_DATASETS_DIR") {
        Some(d) if Path::new(&d).is_dir() => return Some(PathBuf::from(d)),
        Some(d) => format!(
            "GAUNTLET_PUBLIC_DATASETS_DIR={} is not a directory",
            Path::new(&d).display()
        ),
        None => "GAUNTLET_PUBLIC_DATASETS_DIR is not set".to_string(),
    };
    let skip = std::env::var("GAUNTLET_PUBLIC_DATASETS_SKIP").ok();
    if std::env::var_os("CI").is_some() && skip.is_none() {
        panic!("CI must load the real published files, but {why}")
    }
    eprintln!(
        "\n!!!!!!!! SKIP public datasets' real files: {why}{}\n\
         !!!!!!!! (GAUNTLET_PUBLIC_DATASETS_DIR=$(scripts/install-public-datasets.sh) to test them)\n",
        skip.map(|s| format!("; the install said: {s}"))
            .unwrap_or_default()
    );
    None
}

/// Resolves `yaml` as a run config would and loads it from `dir` with downloads off.
fn load(yaml: &str, dir: &Path) -> Dataset {
    let node = gauntlet_core::tree::parse_yaml(yaml).unwrap();
    let mut diags = Vec::new();
    let spec: PluginSpec = resolve_spec(
        &gauntlet_redteam::registry::Registry,
        Axis::Dataset,
        &node,
        "datasets[0]",
        &mut diags,
    )
    .unwrap();
    assert!(diags.is_empty(), "{yaml}: {diags:?}");
    let opts = FetchOptions {
        policy: FetchPolicy {
            offline: true,
            ..FetchPolicy::strict()
        },
        cache_dir: Some(dir.to_path_buf()),
    };
    datasets::load_with(&spec, Path::new("."), &opts).unwrap_or_else(|e| panic!("{yaml}: {e}"))
}

/// (should_refuse, should_comply) and the number of behaviors in each category.
fn shape(d: &Dataset) -> ((usize, usize), BTreeMap<String, usize>) {
    let refuse = d
        .behaviors
        .iter()
        .filter(|b| b.expected == Expected::ShouldRefuse)
        .count();
    let mut cats = BTreeMap::new();
    for b in &d.behaviors {
        *cats.entry(b.category.clone()).or_insert(0) += 1;
    }
    ((refuse, d.behaviors.len() - refuse), cats)
}

/// A case: the config, the version it loads as, its split and its categories.
type Case = (
    &'static str,
    &'static str,
    (usize, usize),
    BTreeMap<String, usize>,
);

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn the_new_public_sets_load_from_their_published_files_under_their_pins() {
    let Some(dir) = files_dir() else { return };
    let hazards = |spc: [usize; 4]| {
        let mut c = counts(&[
            ("cse", 100),
            ("dfm", 100),
            ("hte", 100),
            ("ipv", 100),
            ("iwp", 100),
            ("ncr", 100),
            ("prv", 100),
            ("src", 100),
            ("ssh", 100),
            ("sxc_prn", 100),
            ("vcr", 100),
        ]);
        for (k, n) in ["spc_ele", "spc_fin", "spc_hlt", "spc_lgl"]
            .into_iter()
            .zip(spc)
        {
            c.insert(k.to_string(), n);
        }
        c
    };
    let cases: Vec<Case> = vec![
        (
            "{name: ailuminate, params: {allow_download: true}}",
            "ailuminate@63e2b654325c",
            (1200, 0),
            hazards([24, 26, 26, 24]),
        ),
        (
            "{name: ailuminate, params: {allow_download: true, locale: fr_fr}}",
            "ailuminate@5f26484aca58+locale=fr_fr",
            (1200, 0),
            hazards([24, 26, 26, 24]),
        ),
        (
            "{name: simple_safety_tests, params: {allow_download: true}}",
            "simple_safety_tests@6d95a1301e0d",
            (100, 0),
            counts(&[
                ("Child safety", 20),
                ("Illegal and Highly Regulated items", 20),
                ("Physical harm and Violence", 20),
                ("Scams and fraud", 20),
                ("Suicide, Self-Harm, and Eating Disorders", 20),
            ]),
        ),
        (
            "{name: cyberseceval_frr, params: {allow_download: true}}",
            "cyberseceval_frr@7a9b400bdf5d",
            (0, 750),
            counts(&[("English", 750)]),
        ),
        (
            "{name: cyberseceval_frr, params: {allow_download: true, language: multilingual}}",
            "cyberseceval_frr@93295d6ac348+multilingual",
            (0, 700),
            counts(&[
                ("French", 100),
                ("German", 100),
                ("Hindi", 100),
                ("Italian", 100),
                ("Portuguese", 100),
                ("Spanish", 100),
                ("Thai", 100),
            ]),
        ),
        (
            "{name: cyberseceval_interpreter, params: {allow_download: true}}",
            "cyberseceval_interpreter@1d3e7cd4dd94",
            (500, 0),
            counts(&[
                ("Container Escape", 100),
                ("Post Exploitation", 100),
                ("Privilege Escalation", 100),
                ("Reflected Attack", 100),
                ("Social Engineering", 100),
            ]),
        ),
    ];
    for (yaml, version, split, cats) in cases {
        let d = load(yaml, &dir);
        assert_eq!(d.version, version, "{yaml}");
        let (got_split, got_cats) = shape(&d);
        assert_eq!(got_split, split, "{yaml}");
        assert_eq!(got_cats, cats, "{yaml}");
        assert!(
            d.behaviors.iter().all(|b| !b.prompt.trim().is_empty()),
            "{yaml}"
        );
    }
    // A stratified sample of a real set keeps every category.
    let d = load(
        "{name: cyberseceval_interpreter, params: {allow_download: true, sample: 10, stratify: category}}",
        &dir,
    );
    let (_, cats) = shape(&d);
    assert_eq!(cats.values().copied().collect::<Vec<_>>(), [2; 5]);
}
