//! Unit tests of the public API types (`lib.rs`).

use super::*;

#[test]
fn supervisor_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Supervisor>();
    check::<RunReport>();
}

#[test]
fn jail_levels() {
    assert_eq!(
        JailLevel::lowered::<&str>(&[]).ok(),
        Some(JailLevel::full())
    );
    let l = JailLevel::lowered(&["landlock", "seccomp"]).ok();
    assert_eq!(
        l.map(|l| l.executor_spec(&Limits::default()).level()),
        Some("lowered(-landlock,-seccomp)".into())
    );
    assert!(JailLevel::lowered(&["bogus"]).is_err());
    let s = JailLevel::full().executor_spec(&Limits::default());
    assert_eq!(s.as_bytes, 768 << 20);
    assert_eq!(s.cpu_seconds, 11);
}

#[test]
fn report_serializes_to_the_contract_keys() {
    let r = RunReport {
        ok: true,
        value: serde_json::json!(2),
        repr: Some("2".into()),
        stdout: String::new(),
        grade: Grade::default(),
        trace: vec![TraceEntry {
            tool: "read_file".into(),
            args: vec![serde_json::json!("a.txt")],
            ok: true,
            duration_us: 3,
            error: None,
            result_bytes: None,
        }],
        error: None,
        warnings: Vec::new(),
        run_id: "x".into(),
        jail_level: "full".into(),
        calls: vec![],
        vars: None,
        surrogates: false,
        skipped_vars: vec![],
    };
    let v = serde_json::to_value(&r).unwrap_or_default();
    let mut keys: Vec<_> = v
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    assert_eq!(
        keys,
        ["error", "grade", "ok", "repr", "stdout", "trace", "value"]
    );
    let t = &v["trace"][0];
    let mut tk: Vec<_> = t
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    tk.sort();
    assert_eq!(tk, ["args", "duration_us", "error", "ok", "tool"]);
}
