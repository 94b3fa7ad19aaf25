//! Corpus walk, manifest, pin and load tests against hand-computed vectors.
//!
//! The sha256 constants below were computed independently with `sha256sum` over the
//! literal file contents written by `build_corpus`, and the manifest digest with
//! `sha256sum` over the manifest text, so a change to the walk, the prune rules, the
//! sort, the line format or the hashing fails these tests.

use gauntlet_corpus::{
    CorpusError, IntegrityError, MANIFEST_FILE, Manifest, PIN_FILE, Pin, PinError, load_corpus,
    load_extra, pin, scan,
};
use std::fs;
use std::path::Path;

const HIDDEN: &str = "id: HIDDEN\nfinding: {id: f5}\n";
const AB: &str = "id: AB\nfinding: {id: f3}\n";
const AX: &str = "id: AX\nfinding: {id: f4}\n";
const AF: &str = "id: AF-01\nfinding: {id: f1}\n";
const DEEP: &str = "id: DEEP\nfinding: {id: f2}\n";

const SHA_HIDDEN: &str = "53290dd333d93543e4291b666c58dc297442a55fe3f1bc516db5138bbb17dc47";
const SHA_AB: &str = "637d4033234b565d164f6c931314de435772418f70f1783dc09d761bbbede1d2";
const SHA_AX: &str = "b186e0fb485c0bab1a651a471e3b368fad523b871ae3b4e7048173a62d006d44";
const SHA_AF: &str = "cb645b565df733bb9234106c8787c5ae325f8ea89deb39227f77c6467c5f8172";
const SHA_DEEP: &str = "6fb9e90e8e87f6af1f45eb6346fc03c9488cd73544bf1798d99c213a57dd2045";
const DIGEST: &str = "57a936b6e861e4416066c6ad44175b61cb4c7a29a8af7a8d562b102083d2aba6";

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// Five scenarios plus everything the walk must leave out.
fn build_corpus(root: &Path) {
    write(root, ".hidden/x.yaml", HIDDEN); // dot-prefixed: included
    write(root, "a-b.yaml", AB);
    write(root, "a/x.yaml", AX);
    write(root, "auth/AF-01.yaml", AF);
    write(root, "auth/nested/deep.yml", DEEP); // .yml: included
    // Excluded. Each is also invalid as a scenario, so including any would fail a load.
    write(root, "_schema.yaml", "type: object\n");
    write(root, "_test/probe.yaml", "probe: true\n");
    write(root, "_test/inner/more.yaml", "probe: true\n");
    write(root, "auth/_draft.yaml", "id: [\n");
    write(root, "a/_b/c.yaml", "nope\n");
    write(root, "notes.txt", "id: NOTES\nfinding: {}\n");
    write(root, "README.md", "# corpus\n");
    write(root, "upper.YAML", "id: UPPER\nfinding: {}\n");
    write(root, "auth/scenario.yaml.bak", "id: BAK\nfinding: {}\n");
}

fn expected_manifest() -> String {
    format!(
        ".hidden/x.yaml  {SHA_HIDDEN}\n\
         a-b.yaml  {SHA_AB}\n\
         a/x.yaml  {SHA_AX}\n\
         auth/AF-01.yaml  {SHA_AF}\n\
         auth/nested/deep.yml  {SHA_DEEP}\n"
    )
}

fn pinned_corpus() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    build_corpus(dir.path());
    pin(dir.path()).unwrap();
    dir
}

#[test]
fn manifest_and_digest_match_hand_computed_vectors() {
    let dir = tempfile::tempdir().unwrap();
    build_corpus(dir.path());
    let files = scan(dir.path()).unwrap();
    // Sorted bytewise by the full relpath, not depth-first ("a-b" < "a/" < "auth").
    let rels: Vec<&str> = files.iter().map(|f| f.relpath.as_str()).collect();
    assert_eq!(
        rels,
        [
            ".hidden/x.yaml",
            "a-b.yaml",
            "a/x.yaml",
            "auth/AF-01.yaml",
            "auth/nested/deep.yml"
        ]
    );
    let manifest = Manifest::from_files(&files);
    assert_eq!(manifest.render(), expected_manifest());
    assert_eq!(manifest.digest(), DIGEST);
    assert_eq!(manifest.len(), 5);
    // The scan carries the bytes it hashed.
    let ab = files.iter().find(|f| f.relpath == "a-b.yaml").unwrap();
    assert_eq!(ab.bytes, AB.as_bytes());
    assert_eq!(ab.sha256, SHA_AB);
    assert_eq!(ab.path, dir.path().join("a-b.yaml"));
}

#[test]
fn pin_writes_count_and_digest_and_load_verifies_it() {
    let dir = tempfile::tempdir().unwrap();
    build_corpus(dir.path());
    let report = pin(dir.path()).unwrap();
    assert_eq!(report.pin.count, 5);
    assert_eq!(report.pin.sha256, DIGEST);
    assert!(report.previous.is_none() && report.count_changed && report.digest_changed);
    assert_eq!(report.diff, None);

    let text = fs::read_to_string(dir.path().join(PIN_FILE)).unwrap();
    assert!(text.starts_with('#'), "{text}");
    assert!(
        text.ends_with(&format!("count 5\nsha256 {DIGEST}\n")),
        "{text}"
    );
    // The manifest record is pruned by the walk, so pinning is idempotent.
    assert_eq!(
        fs::read_to_string(dir.path().join(MANIFEST_FILE)).unwrap(),
        expected_manifest()
    );
    assert_eq!(
        Manifest::from_files(&scan(dir.path()).unwrap()).digest(),
        DIGEST
    );

    let corpus = load_corpus(dir.path(), None).unwrap();
    assert_eq!(corpus.count, 5);
    assert_eq!(corpus.digest, DIGEST);
    let ids: Vec<&str> = corpus
        .scenarios
        .iter()
        .map(|s| s.scenario.id.as_str())
        .collect();
    assert_eq!(ids, ["AB", "AF-01", "AX", "DEEP", "HIDDEN"]);
    let rels: Vec<&str> = corpus
        .scenarios
        .iter()
        .map(|s| s.relpath.as_str())
        .collect();
    assert_eq!(
        rels,
        [
            "a-b.yaml",
            "auth/AF-01.yaml",
            "a/x.yaml",
            "auth/nested/deep.yml",
            ".hidden/x.yaml"
        ]
    );
    assert_eq!(corpus.get("DEEP").unwrap().sha256, SHA_DEEP);
    assert!(corpus.get("NOTES").is_none());
    assert!(corpus.scenarios.iter().all(|s| !s.extra));
}

#[test]
fn a_mallcop_style_pin_verifies() {
    // No comments, uppercase hex, extra inner whitespace: still the same pin.
    let dir = tempfile::tempdir().unwrap();
    build_corpus(dir.path());
    let body = format!("count 5\n\n  sha256\t{}  \n", DIGEST.to_uppercase());
    fs::write(dir.path().join(PIN_FILE), body).unwrap();
    let corpus = load_corpus(dir.path(), None).unwrap();
    assert_eq!(corpus.digest, DIGEST);
}

#[test]
fn tampered_file_fails_integrity_before_anything_parses() {
    let dir = pinned_corpus();
    // Invalid as a scenario: if it were parsed we would see a scenario error instead.
    let tampered = "id: AB\nfinding: [not, a, mapping]\n";
    write(dir.path(), "a-b.yaml", tampered);
    let err = load_corpus(dir.path(), None).unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("CORPUS INTEGRITY FAIL:"), "{msg}");
    assert!(msg.contains(DIGEST), "expected digest missing: {msg}");
    let actual = match &err {
        CorpusError::Integrity(IntegrityError::Digest {
            expected, actual, ..
        }) => {
            assert_eq!(expected, DIGEST);
            actual.clone()
        }
        other => panic!("wanted a digest mismatch, got {other:?}"),
    };
    assert_ne!(actual, DIGEST);
    assert!(msg.contains(&actual), "actual digest missing: {msg}");
    assert!(
        msg.contains(&dir.path().join(PIN_FILE).display().to_string()),
        "pin path missing: {msg}"
    );
}

#[test]
fn count_mismatch_is_reported_before_digest_mismatch() {
    let dir = pinned_corpus();
    // Adding a file changes both the count and the digest; the count must win.
    write(dir.path(), "new/extra.yaml", "id: NEW\nfinding: {}\n");
    let err = load_corpus(dir.path(), None).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            CorpusError::Integrity(IntegrityError::Count {
                expected: 5,
                actual: 6,
                ..
            })
        ),
        "{msg}"
    );
    assert!(
        msg.starts_with("CORPUS INTEGRITY FAIL: count mismatch"),
        "{msg}"
    );
    assert!(msg.contains(" 5 ") && msg.contains(" 6"), "{msg}");
    assert!(msg.contains(PIN_FILE), "{msg}");

    // A removed file likewise.
    let dir = pinned_corpus();
    fs::remove_file(dir.path().join("a/x.yaml")).unwrap();
    let err = load_corpus(dir.path(), None).unwrap_err();
    assert!(
        matches!(
            err,
            CorpusError::Integrity(IntegrityError::Count {
                expected: 5,
                actual: 4,
                ..
            })
        ),
        "{err}"
    );
}

#[test]
fn changes_to_excluded_files_do_not_matter() {
    let dir = pinned_corpus();
    write(dir.path(), "_schema.yaml", "changed: true\n");
    write(dir.path(), "_test/new.yaml", "x: 1\n");
    write(dir.path(), "deep/_wip/new.yaml", "x: 1\n");
    write(dir.path(), "notes.txt", "changed\n");
    assert_eq!(load_corpus(dir.path(), None).unwrap().digest, DIGEST);
}

#[test]
fn missing_pin_refuses_to_load() {
    let dir = tempfile::tempdir().unwrap();
    build_corpus(dir.path());
    let err = load_corpus(dir.path(), None).unwrap_err();
    assert!(
        matches!(err, CorpusError::Pin(PinError::Missing { .. })),
        "{err}"
    );
    assert!(err.to_string().contains(PIN_FILE), "{err}");
}

#[test]
fn missing_root_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let err = load_corpus(&dir.path().join("nope"), None).unwrap_err();
    assert!(matches!(err, CorpusError::RootNotFound { .. }), "{err}");
}

#[test]
fn invalid_scenario_in_a_verified_corpus_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    build_corpus(dir.path());
    write(dir.path(), "bad/noid.yaml", "finding: {id: f}\n");
    pin(dir.path()).unwrap();
    let err = load_corpus(dir.path(), None).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, CorpusError::Scenario(_)), "{msg}");
    assert!(msg.contains("bad/noid.yaml:1:1: id:"), "{msg}");
}

#[test]
fn duplicate_ids_name_both_files() {
    let dir = tempfile::tempdir().unwrap();
    build_corpus(dir.path());
    write(dir.path(), "zz/again.yaml", "id: AX\nfinding: {}\n");
    pin(dir.path()).unwrap();
    let msg = load_corpus(dir.path(), None).unwrap_err().to_string();
    assert!(msg.contains("duplicate scenario id `AX`"), "{msg}");
    assert!(
        msg.contains("a/x.yaml") && msg.contains("zz/again.yaml"),
        "{msg}"
    );
}

#[test]
fn extra_scenarios_are_walked_alike_but_never_pinned() {
    let dir = pinned_corpus();
    let extra = tempfile::tempdir().unwrap();
    write(
        extra.path(),
        "det/EX-1.yaml",
        "id: EX-1\nfinding: {id: fx}\n",
    );
    write(
        extra.path(),
        ".dot/EX-2.yml",
        "id: EX-2\nfinding: {id: fy}\n",
    );
    write(extra.path(), "_schema.yaml", "not a scenario: [\n");
    write(extra.path(), "_test/p.yaml", "probe: true\n");
    // A pin in the extra directory is ignored, however wrong.
    write(extra.path(), PIN_FILE, "count 99\n");

    let corpus = load_corpus(dir.path(), Some(extra.path())).unwrap();
    assert_eq!(corpus.count, 5);
    assert_eq!(corpus.digest, DIGEST);
    assert_eq!(corpus.scenarios.len(), 7);
    let extras: Vec<(&str, &str)> = corpus
        .extra()
        .map(|s| (s.scenario.id.as_str(), s.relpath.as_str()))
        .collect();
    assert_eq!(
        extras,
        [("EX-1", "det/EX-1.yaml"), ("EX-2", ".dot/EX-2.yml")]
    );
    assert_eq!(corpus.pinned().count(), 5);
    let ids: Vec<&str> = corpus
        .scenarios
        .iter()
        .map(|s| s.scenario.id.as_str())
        .collect();
    assert_eq!(ids, ["AB", "AF-01", "AX", "DEEP", "EX-1", "EX-2", "HIDDEN"]);

    assert_eq!(load_extra(extra.path()).unwrap().len(), 2);

    // Ids collide across the union: both paths named.
    write(extra.path(), "det/clash.yaml", "id: DEEP\nfinding: {}\n");
    let msg = load_corpus(dir.path(), Some(extra.path()))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("duplicate scenario id `DEEP`"), "{msg}");
    assert!(
        msg.contains("deep.yml") && msg.contains("clash.yaml"),
        "{msg}"
    );
}

#[test]
fn integrity_is_checked_before_the_extra_directory_is_touched() {
    let dir = pinned_corpus();
    write(dir.path(), "a-b.yaml", "id: AB\nfinding: {id: changed}\n");
    let extra = tempfile::tempdir().unwrap();
    write(extra.path(), "broken.yaml", "id: [\n");
    let err = load_corpus(dir.path(), Some(extra.path())).unwrap_err();
    assert!(matches!(err, CorpusError::Integrity(_)), "{err}");
}

#[test]
fn repin_reports_count_digest_and_per_file_changes() {
    let dir = pinned_corpus();
    // Custom comments in an unchanged pin survive a no-op re-pin.
    let custom = format!("# ours\ncount 5\nsha256 {DIGEST}\n");
    fs::write(dir.path().join(PIN_FILE), &custom).unwrap();
    let r = pin(dir.path()).unwrap();
    assert!(!r.count_changed && !r.digest_changed);
    assert_eq!(r.diff.as_ref().map(|d| d.is_empty()), Some(true));
    assert_eq!(
        fs::read_to_string(dir.path().join(PIN_FILE)).unwrap(),
        custom
    );

    write(dir.path(), "a-b.yaml", "id: AB\nfinding: {id: g3}\n");
    write(dir.path(), "z/new.yaml", "id: Z\nfinding: {}\n");
    fs::remove_file(dir.path().join(".hidden/x.yaml")).unwrap();
    let r = pin(dir.path()).unwrap();
    assert!(!r.count_changed, "5 - 1 + 1 files");
    assert!(r.digest_changed);
    assert_eq!(r.previous.as_ref().unwrap().sha256, DIGEST);
    let d = r.diff.unwrap();
    assert_eq!(d.added, ["z/new.yaml"]);
    assert_eq!(d.removed, [".hidden/x.yaml"]);
    assert_eq!(d.changed, ["a-b.yaml"]);
    assert_eq!(r.manifest.len(), 5);
    load_corpus(dir.path(), None).unwrap();

    // A manifest record that does not hash to the previous pin is not trusted.
    write(dir.path(), MANIFEST_FILE, "garbage\n");
    write(dir.path(), "z/new2.yaml", "id: Z2\nfinding: {}\n");
    let r = pin(dir.path()).unwrap();
    assert!(r.count_changed && r.diff.is_none());
    load_corpus(dir.path(), None).unwrap();
}

#[test]
fn repin_replaces_a_malformed_pin() {
    let dir = tempfile::tempdir().unwrap();
    build_corpus(dir.path());
    fs::write(dir.path().join(PIN_FILE), "count five\n").unwrap();
    let r = pin(dir.path()).unwrap();
    assert!(r.previous.is_none());
    assert!(r.previous_error.unwrap().contains(":1:"));
    assert_eq!(Pin::read(&dir.path().join(PIN_FILE)).unwrap(), r.pin);
}

#[cfg(unix)]
#[test]
fn symlinks_never_lead_outside_the_root() {
    use std::os::unix::fs::symlink;
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "evil.yaml", "id: EVIL\nfinding: {}\n");
    write(outside.path(), "dir/more.yaml", "id: MORE\nfinding: {}\n");

    // A symlinked directory is a leaf: not descended, not an error.
    let dir = tempfile::tempdir().unwrap();
    build_corpus(dir.path());
    symlink(outside.path().join("dir"), dir.path().join("linked")).unwrap();
    symlink(
        outside.path().join("evil.yaml"),
        dir.path().join("notes-link.txt"),
    )
    .unwrap();
    assert_eq!(
        Manifest::from_files(&scan(dir.path()).unwrap()).digest(),
        DIGEST
    );

    // A scenario-named symlink inside the root is followed.
    symlink(dir.path().join("a-b.yaml"), dir.path().join("alias.yaml")).unwrap();
    let files = scan(dir.path()).unwrap();
    let alias = files.iter().find(|f| f.relpath == "alias.yaml").unwrap();
    assert_eq!(alias.sha256, SHA_AB);

    // One pointing outside is refused.
    symlink(
        outside.path().join("evil.yaml"),
        dir.path().join("evil.yaml"),
    )
    .unwrap();
    let err = scan(dir.path()).unwrap_err();
    assert!(matches!(err, CorpusError::UnsafeSymlink { .. }), "{err}");
    assert!(err.to_string().contains("outside the corpus root"), "{err}");

    // So is a dangling one.
    let dir = tempfile::tempdir().unwrap();
    symlink(
        dir.path().join("gone.yaml"),
        dir.path().join("dangling.yaml"),
    )
    .unwrap();
    assert!(matches!(
        scan(dir.path()).unwrap_err(),
        CorpusError::UnsafeSymlink { .. }
    ));
}

#[cfg(unix)]
#[test]
fn a_root_reached_through_a_symlink_works() {
    use std::os::unix::fs::symlink;
    let real = pinned_corpus();
    let holder = tempfile::tempdir().unwrap();
    let link = holder.path().join("scenarios");
    symlink(real.path(), &link).unwrap();
    assert_eq!(load_corpus(&link, None).unwrap().digest, DIGEST);
}
