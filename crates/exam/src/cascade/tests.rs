use super::*;

#[test]
fn headers_round_trip() {
    for t in Tier::ALL {
        assert_eq!(Tier::from_system(&t.system_prompt()), Some(t));
    }
    assert_eq!(Tier::from_system("hello"), None);
}

#[test]
fn every_floor_route() {
    let o = CascadeOptions::default();
    let none: Vec<(String, String)> = vec![];
    for (t, id) in [
        ("priv-escalation", "E-001"),
        ("Priv_Escalation", "E-001"),
        ("detector:priv-escalation", "E-001"),
        ("privilege escalation", "E-001"),
        ("injection-probe", "E-002"),
        ("prompt.injection", "E-002"),
        ("log-format-drift", "E-003"),
        ("LOG_FORMAT_DRIFT", "E-003"),
        ("secrets-exposure", "E-004"),
        ("secret/exposure", "E-004"),
        ("boundary-violation", "E-005"),
    ] {
        assert_eq!(floor_route(t, &none, &o), Some(id), "{t}");
    }
    for t in ["new-actor", "exfil-pattern", "injection", "secrets", ""] {
        assert_eq!(floor_route(t, &none, &o), None, "{t}");
    }
    let md = vec![("boundary_violation".to_string(), "True".to_string())];
    assert_eq!(floor_route("new-actor", &md, &o), Some("E-005"));
    let over = CascadeOptions {
        findings_in_scan: 26,
        ..CascadeOptions::default()
    };
    assert_eq!(floor_route("new-actor", &none, &over), Some("E-006"));
    let at = CascadeOptions {
        findings_in_scan: 25,
        ..CascadeOptions::default()
    };
    assert_eq!(floor_route("new-actor", &none, &at), None);
}
