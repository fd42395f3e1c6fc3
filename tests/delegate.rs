//! `lackpy delegate` end to end: the real binary, a temp workspace, and
//! fake model endpoints on loopback addresses started by each test (a `TcpListener`
//! thread with scripted answers). Model calls go through the jailed
//! inferencer worker; programs run in the jailed executor.

use crate::util::{json, lackpy, workspace};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::util::fake_server::{closed_port_url, ollama, openai, Reply, Server as Fake};

fn ws_with_config(config: &str) -> tempfile::TempDir {
    workspace(&[
        ("notes/a.txt", "hello\nworld\n"),
        ("notes/b.txt", "one\n"),
        ("README.md", "# Demo\n"),
        (".lackpy/config.toml", config),
    ])
}

/// A workspace whose only inference provider is `local`: the ollama
/// plugin at `url`, with `extra` provider settings.
fn local_ollama_ws(url: &str, extra: &str) -> tempfile::TempDir {
    ws_with_config(&format!(
        "[inference]\norder = [\"local\"]\n{}",
        provider("local", "ollama", url, extra)
    ))
}

fn delegate(ws: &Path, intent: &str, extra: &[&str]) -> Output {
    let mut c = lackpy();
    c.arg("delegate")
        .arg(intent)
        .arg("--json")
        .arg("--workspace")
        .arg(ws)
        .args(extra);
    c.env_remove("LACKPY_INFERENCE_IN_PROCESS");
    c.output().expect("run lackpy")
}

fn provider(name: &str, plugin: &str, url: &str, extra: &str) -> String {
    format!("[inference.providers.{name}]\nplugin = \"{plugin}\"\nbase_url = \"{url}\"\nmodel = \"m\"\ntimeout_seconds = 5\nretries = 0\n{extra}\n")
}

#[test]
fn template_needs_no_model() {
    let ws = ws_with_config("");
    let down = closed_port_url();
    let out = delegate(ws.path(), "read notes/a.txt", &["--ollama-url", &down]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["ok"], true);
    assert_eq!(v["provider"], "templates");
    assert_eq!(v["program"], "read_file(\"notes/a.txt\")");
    assert_eq!(v["value"], "hello\nworld\n");
    assert_eq!(v["attempts"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["trace"][0]["tool"], "read_file");
}

#[test]
fn rules_answer_simple_listing() {
    let ws = ws_with_config("");
    let down = closed_port_url();
    let out = delegate(ws.path(), "list all text files", &["--ollama-url", &down]);
    let v = json(&out);
    assert_eq!(v["provider"], "rules", "{v}");
    assert_eq!(
        v["value"],
        serde_json::json!(["notes/a.txt", "notes/b.txt"])
    );
}

#[test]
fn model_through_jailed_worker() {
    let fake = Fake::start(vec![ollama(
        "Here you go:\n```python\ncontent = read_file('notes/a.txt')\ncontent.upper()\n```",
    )]);
    let ws = local_ollama_ws(&fake.url, "");
    let out = delegate(ws.path(), "shout the first note", &[]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["value"], "HELLO\nWORLD\n");
    assert_eq!(v["provider"], "local");
    assert_eq!(
        v["program"],
        "content = read_file('notes/a.txt')\ncontent.upper()"
    );
    assert!(v["attempts"][0]["raw"]
        .as_str()
        .unwrap_or("")
        .starts_with("Here you go"));
    let req = &fake.requests()[0];
    assert!(req.starts_with("POST /api/generate "), "{req}");
    assert!(req.contains("shout the first note") && req.contains("read_file(path: str) -> str"));
}

/// A virtual tool with no host to supply it is not offered to the model.
#[test]
fn unavailable_virtual_tools_are_not_in_the_prompt() {
    let fake = Fake::start(vec![ollama(
        "```python\nlen(read_file('notes/b.txt'))\n```",
    )]);
    let ws = ws_with_config(&format!(
        "[[virtual_tools]]\nname = \"ask_user\"\ndescription = \"Ask the person a question\"\nargs = [{{ name = \"question\", type = \"str\" }}]\n\n\
         [profiles.p]\ntools = [\"read_file\", \"ask_user\"]\n\n\
         [inference]\norder = [\"local\"]\n{}",
        provider("local", "ollama", &fake.url, "")
    ));
    let out = delegate(ws.path(), "count the second note", &["--profile", "p"]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["value"], 4);
    let req = &fake.requests()[0];
    assert!(req.contains("read_file(path: str) -> str"), "{req}");
    assert!(!req.contains("ask_user"), "{req}");
}

#[test]
fn streaming_chat_through_jailed_worker() {
    let piece = |t: &str, done: bool| {
        format!(
            "{}\n",
            serde_json::json!({"message": {"role": "assistant", "content": t}, "done": done})
        )
    };
    let fake = Fake::start(vec![Reply::Chunks(
        vec![
            piece("```python\nlen(read_", false),
            piece("file('notes/b.txt'))\n", false),
            piece("```", false),
            piece("", true),
        ],
        Duration::from_millis(5),
    )]);
    let ws = ws_with_config(&format!(
        "[inference]\norder = [\"local\"]\n{}",
        provider(
            "local",
            "ollama",
            &fake.url,
            "api = \"chat\"\nstream = true"
        )
    ));
    let out = delegate(ws.path(), "how long is the second note", &[]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["program"], "len(read_file('notes/b.txt'))");
    assert_eq!(v["value"], 4);
    let req = &fake.requests()[0];
    assert!(
        req.starts_with("POST /api/chat ") && req.contains("\"stream\":true"),
        "{req}"
    );
}

#[test]
fn retry_with_hints_then_success() {
    let fake = Fake::start(vec![
        ollama("import os\nos.listdir('notes')"),
        ollama("find_files('notes/*')"),
    ]);
    let ws = local_ollama_ws(&fake.url, "");
    let out = delegate(ws.path(), "what is in the notes folder", &[]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(
        v["value"],
        serde_json::json!(["notes/a.txt", "notes/b.txt"])
    );
    let attempts = v["attempts"].as_array().cloned().unwrap_or_default();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0]["error"]["kind"], "validation");
    assert!(attempts[0]["error"]["line"].is_number(), "{}", attempts[0]);
    let retry = &fake.requests()[1];
    assert!(
        retry.contains("import os") && retry.contains("line 1"),
        "{retry}"
    );
    assert!(retry.contains("no import lines"), "{retry}");
}

#[test]
fn cascade_from_failing_small_model_to_openai() {
    let small = Fake::start(vec![Reply::Body(500, "{\"error\":\"boom\"}".into())]);
    let big = Fake::start(vec![openai("len(find_files('notes/*.txt'))")]);
    let config = format!(
        "[inference]\norder = [\"small\", \"big\"]\n{}{}",
        provider("small", "ollama", &small.url, ""),
        provider(
            "big",
            "openai",
            &big.url,
            "api_key_env = \"LACKPY_TEST_KEY\""
        )
    );
    let ws = ws_with_config(&config);
    let mut c = lackpy();
    c.args([
        "delegate",
        "how many notes are there",
        "--json",
        "--workspace",
    ])
    .arg(ws.path());
    c.env("LACKPY_TEST_KEY", "sk-very-secret");
    let out = c.output().expect("run");
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["provider"], "big");
    assert_eq!(v["value"], 2);
    assert_eq!(v["attempts"][0]["error"]["type"], "InferenceFailed");
    assert!(v["attempts"][0]["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("500"));
    let req = &big.requests()[0];
    assert!(req.starts_with("POST /v1/chat/completions "));
    assert!(req
        .to_ascii_lowercase()
        .contains("authorization: bearer sk-very-secret"));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !all.contains("sk-very-secret"),
        "the key leaked into output"
    );
}

#[test]
fn unreachable_model_is_exit_1_naming_the_url() {
    let ws = ws_with_config("");
    let down = closed_port_url();
    let t0 = Instant::now();
    let out = delegate(
        ws.path(),
        "summarise the project notes for me",
        &["--ollama-url", &down],
    );
    let v = json(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(v["ok"], false);
    assert_eq!(v["error"]["kind"], "tool");
    assert_eq!(v["error"]["type"], "InferenceFailed");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("{down}/api/generate")),
        "{v}"
    );
    assert!(v["program"].is_null());
    assert!(t0.elapsed() < Duration::from_secs(15));
}

#[test]
fn no_valid_program_is_exit_2() {
    let fake = Fake::start(vec![
        ollama("while True:\n    pass"),
        ollama("def f():\n    return 1\nf()"),
    ]);
    let ws = local_ollama_ws(&fake.url, "");
    let out = delegate(ws.path(), "loop forever", &[]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(2), "{v}");
    assert_eq!(v["error"]["kind"], "validation");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("no provider produced a valid program"),
        "{v}"
    );
    assert_eq!(v["attempts"].as_array().map(Vec::len), Some(2));
    assert!(
        fake.requests()[1].contains("for loop"),
        "retry hint for while"
    );
}

#[test]
fn silent_model_times_out() {
    let fake = Fake::start(vec![Reply::Silent(Duration::from_secs(8))]);
    let ws = ws_with_config(&format!(
        "[inference]\norder = [\"local\"]\n[inference.providers.local]\nplugin = \"ollama\"\nhost = \"{}\"\ntimeout_seconds = 0.5\nretries = 0\n",
        fake.url
    ));
    let t0 = Instant::now();
    let out = delegate(ws.path(), "do the thing", &[]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("did not answer: gave up after"),
        "{v}"
    );
    assert!(t0.elapsed() < Duration::from_secs(6), "{:?}", t0.elapsed());
}

#[test]
fn oversized_answer_is_refused() {
    let fake = Fake::start(vec![Reply::Huge(200_000)]);
    let ws = local_ollama_ws(&fake.url, "max_response_bytes = 4096");
    let out = delegate(ws.path(), "do the thing", &[]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("exceeded 4096 bytes"),
        "{v}"
    );
}

#[test]
fn runtime_failure_of_generated_program() {
    let fake = Fake::start(vec![ollama("read_file('missing.txt')")]);
    let ws = local_ollama_ws(&fake.url, "");
    let out = delegate(ws.path(), "show me the missing file", &[]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(v["error"]["kind"], "tool");
    assert_eq!(v["program"], "read_file('missing.txt')");
    // Read-only: the failure went back to the model (its only provider),
    // with the error, since the workspace view is on for a local endpoint.
    let seen = fake.requests();
    assert_eq!(
        seen.len(),
        1,
        "the fake serves one answer; the retry found it gone"
    );
    assert!(
        !ws.path().join(".lackpy/ratchet.json").exists(),
        "failures are not recorded"
    );
}

#[test]
fn ratchet_promotes_after_n_successes() {
    let fake = Fake::start(vec![
        ollama("len(find_files('notes/*'))"),
        ollama("len(find_files('notes/*'))"),
    ]);
    let ws = ws_with_config(&format!(
        "[inference]\norder = [\"templates\", \"local\"]\npromote_after = 2\npromote_unconfirmed = true\n{}",
        provider("local", "ollama", &fake.url, "")
    ));
    for _ in 0..2 {
        let v = json(&delegate(ws.path(), "Count my notes!", &[]));
        assert_eq!(v["provider"], "local", "{v}");
    }
    let t = std::fs::read_to_string(ws.path().join(".lackpy/templates.toml")).unwrap_or_default();
    assert!(t.contains("count my notes"), "{t}");
    let v = json(&delegate(ws.path(), "count my   notes", &[]));
    assert_eq!(v["provider"], "templates", "{v}");
    assert_eq!(v["value"], 2);
    assert_eq!(fake.requests().len(), 2);
}

#[test]
fn ratchet_waits_for_confirmation_by_default() {
    let fake = Fake::start(vec![ollama("len(find_files('notes/*'))"); 3]);
    let ws = ws_with_config(&format!(
        "[inference]\norder = [\"templates\", \"local\"]\npromote_after = 1\n{}",
        provider("local", "ollama", &fake.url, "")
    ));
    for _ in 0..2 {
        let v = json(&delegate(ws.path(), "count my notes", &[]));
        assert_eq!(v["provider"], "local", "{v}");
        assert!(
            v["confirm"].as_str().unwrap_or("").contains("run_id"),
            "{v}"
        );
        let r = std::fs::read_to_string(ws.path().join(".lackpy/ratchet.json")).unwrap_or_default();
        let id = v["run_id"].as_str().unwrap_or("?");
        assert!(r.contains(id), "pending under its run id: {r}");
    }
    assert!(
        !ws.path().join(".lackpy/templates.toml").exists(),
        "unconfirmed results never promote"
    );
}

/// The MCP `confirm_result` tool: a confirmed delegate result promotes
/// (promote_after = 1), a rejection of a later result demotes.
#[tokio::test]
async fn confirm_result_over_mcp_promotes_and_rejects() {
    let fake = Fake::start(vec![ollama("len(find_files('notes/*'))"); 2]);
    let ws = ws_with_config(&format!(
        "[inference]\norder = [\"templates\", \"local\"]\npromote_after = 1\n{}",
        provider("local", "ollama", &fake.url, "")
    ));
    let c = crate::mcp::connect(ws.path(), &[]).await;
    let r = crate::mcp::call(
        &c,
        "delegate",
        serde_json::json!({"intent": "count my notes"}),
    )
    .await;
    let v = r.structured_content.clone().unwrap_or_default();
    assert_eq!(v["provider"], "local", "{v}");
    let id = v["run_id"].as_str().unwrap_or("").to_string();
    let r = crate::mcp::call(
        &c,
        "confirm_result",
        serde_json::json!({"run_id": id, "correct": true}),
    )
    .await;
    let v = r.structured_content.clone().unwrap_or_default();
    assert_eq!(v["ok"], true, "{v}");
    assert!(
        v["ratchet"].as_str().unwrap_or("").contains("promoted"),
        "{v}"
    );
    // Judged once only; unknown ids are refused.
    let r = crate::mcp::call(
        &c,
        "confirm_result",
        serde_json::json!({"run_id": id, "correct": true}),
    )
    .await;
    let v = r.structured_content.clone().unwrap_or_default();
    assert_eq!(v["error"]["type"], "UnknownRun", "{v}");
    // Now the template answers; rejecting its result removes it.
    let r = crate::mcp::call(
        &c,
        "delegate",
        serde_json::json!({"intent": "count my notes"}),
    )
    .await;
    let v = r.structured_content.clone().unwrap_or_default();
    assert_eq!(v["provider"], "templates", "{v}");
    let t = std::fs::read_to_string(ws.path().join(".lackpy/templates.toml")).unwrap_or_default();
    assert!(t.contains("count my notes"), "{t}");
    let id = v["run_id"].as_str().unwrap_or("").to_string();
    let r = crate::mcp::call(
        &c,
        "confirm_result",
        serde_json::json!({"run_id": id, "correct": false}),
    )
    .await;
    let v = r.structured_content.clone().unwrap_or_default();
    assert!(
        v["ratchet"]
            .as_str()
            .unwrap_or("")
            .contains("template was removed"),
        "{v}"
    );
    let t = std::fs::read_to_string(ws.path().join(".lackpy/templates.toml")).unwrap_or_default();
    assert!(!t.contains("count my notes"), "{t}");
    let _ = c.cancel().await;
}

#[test]
fn read_only_runtime_failure_moves_the_cascade_on_with_the_workspace_view() {
    let small = Fake::start(vec![ollama("read_file('notes/missing.txt')")]);
    let big = Fake::start(vec![ollama("read_file('notes/a.txt')")]);
    let config = format!(
        "[inference]\norder = [\"small\", \"big\"]\n{}{}",
        provider("small", "ollama", &small.url, "workspace_context = false"),
        provider("big", "ollama", &big.url, "")
    );
    let ws = ws_with_config(&config);
    let out = delegate(ws.path(), "show the first note", &[]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["provider"], "big", "{v}");
    assert_eq!(v["value"], "hello\nworld\n");
    assert_eq!(v["attempts"][0]["error"]["kind"], "tool", "{v}");
    assert_eq!(v["rerun_safe"], true);
    // The view reaches only the provider that allows it.
    let small_prompt = small.requests().join("");
    let big_prompt = big.requests().join("");
    assert!(!small_prompt.contains("notes/b.txt"), "{small_prompt}");
    assert!(
        big_prompt.contains("notes/b.txt") && big_prompt.contains("README.md"),
        "{big_prompt}"
    );
    assert!(
        !big_prompt.contains("config.toml"),
        "hidden entries stay out: {big_prompt}"
    );
}

#[test]
fn an_empty_value_asks_the_model_once_more() {
    // `*.txt` matches nothing at the top: the model is told the value was
    // [] and its second cell, which finds the notes, is the answer.
    let fake = Fake::start(vec![
        ollama("find_files('*.txt')"),
        ollama("find_files('notes/*.txt')"),
    ]);
    let ws = local_ollama_ws(&fake.url, "");
    let out = delegate(ws.path(), "the text files", &[]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["program"], "find_files('notes/*.txt')", "{v}");
    assert_eq!(
        v["value"],
        serde_json::json!(["notes/a.txt", "notes/b.txt"])
    );
    assert_eq!(v["attempts"][0]["error"]["type"], "EmptyResult", "{v}");
    let retry = &fake.requests()[1];
    assert!(retry.contains("its value is []"), "{retry}");
    // A second cell that fails leaves the first one standing, with the
    // report of its own run (not run again).
    let fake = Fake::start(vec![
        ollama("find_files('*.txt')"),
        ollama("read_file('notes/missing.txt')"),
    ]);
    let ws = local_ollama_ws(&fake.url, "");
    let out = delegate(ws.path(), "the text files", &[]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["program"], "find_files('*.txt')", "{v}");
    assert_eq!(v["value"], serde_json::json!([]));
    assert_eq!(v["rerun_safe"], true, "{v}");
    assert_eq!(v["attempts"].as_array().map(Vec::len), Some(2), "{v}");
    assert_eq!(fake.requests().len(), 2);
}

#[test]
fn a_program_with_effects_runs_once() {
    let small = Fake::start(vec![ollama(
        "write_file('out.txt', 'x')\nread_file('notes/missing.txt')",
    )]);
    let big = Fake::start(vec![ollama("1")]);
    let config = format!(
        "[inference]\norder = [\"small\", \"big\"]\n{}{}",
        provider("small", "ollama", &small.url, ""),
        provider("big", "ollama", &big.url, "")
    );
    let ws = ws_with_config(&config);
    let out = delegate(
        ws.path(),
        "write out.txt then show a note",
        &["--tools", "read_file,write_file"],
    );
    let v = json(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(v["rerun_safe"], false, "{v}");
    assert!(
        v["error"]["hint"]
            .as_str()
            .unwrap_or("")
            .contains("not re-run"),
        "{v}"
    );
    assert!(
        big.requests().is_empty(),
        "never handed to another provider"
    );
    assert_eq!(v["attempts"].as_array().map(Vec::len), Some(1));
}

#[test]
fn comment_only_or_constant_answers_are_not_success() {
    let fake = Fake::start(vec![
        ollama("# there is nothing to compute"),
        ollama("# there is nothing to compute"),
        ollama("42"),
    ]);
    let ws = local_ollama_ws(&fake.url, "");
    let out = delegate(ws.path(), "how many notes are there", &[]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(2), "{v}");
    let types: Vec<&str> = v["attempts"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["error"]["type"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(types, ["EmptyProgram", "EmptyProgram", "NoToolCall"], "{v}");
    // The repeated answer got a different request.
    assert!(fake.requests()[2].contains("Write a different cell"));
}

#[test]
fn tool_arguments_are_checked_before_running() {
    let fake = Fake::start(vec![
        ollama("find_files('notes', '*.txt')"),
        ollama("find_files('notes/*.txt')"),
    ]);
    let ws = local_ollama_ws(&fake.url, "");
    let v = json(&delegate(ws.path(), "the text notes", &[]));
    assert_eq!(v["attempts"][0]["error"]["type"], "ArgumentError", "{v}");
    assert_eq!(
        v["value"],
        serde_json::json!(["notes/a.txt", "notes/b.txt"])
    );
    assert!(fake.requests()[1].contains("call it as find_files(pattern)"));
}

#[test]
fn explicit_promote() {
    let fake = Fake::start(vec![ollama("sorted(find_files('notes/*'), reverse=True)")]);
    let ws = ws_with_config(&format!(
        "[inference]\norder = [\"templates\", \"local\"]\n{}",
        provider("local", "ollama", &fake.url, "")
    ));
    let v = json(&delegate(
        ws.path(),
        "notes newest name first",
        &["--promote"],
    ));
    assert_eq!(v["provider"], "local", "{v}");
    let v = json(&delegate(ws.path(), "notes newest name first", &[]));
    assert_eq!(v["provider"], "templates", "{v}");
    assert_eq!(
        v["value"],
        serde_json::json!(["notes/b.txt", "notes/a.txt"])
    );
}

#[test]
fn human_output_and_bad_config() {
    let ws = ws_with_config("[inference]\norder = [\"nonesuch\"]\n");
    let out = lackpy()
        .args(["delegate", "x"])
        .arg("--workspace")
        .arg(ws.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nonesuch"));
    let ws = ws_with_config("");
    let out = lackpy()
        .args(["delegate", "read notes/b.txt"])
        .arg("--workspace")
        .arg(ws.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "'one\\n'\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("from templates"));
}

/// The inferencer jail, probed with the test-only `probe` role under the
/// exact spec `delegate` uses: no files, TCP connect only to the endpoint port.
#[cfg(feature = "test-roles")]
mod jail {
    use lackpy_policy::wire::{FromWorker, Limits, ToWorker, PROTOCOL_VERSION};
    use lackpy_supervisor::spawn::{self, ExeHandle, Greeting};
    use std::net::TcpListener;
    use std::os::unix::process::ExitStatusExt;
    use std::time::{Duration, Instant};

    fn probe(port: u16, action: &str, arg: &str) -> String {
        let exe = ExeHandle::open(&crate::util::bin()).expect("exe");
        let spec = lackpy_inferencer::worker::jail_spec(port, 5);
        let mut w = spawn::spawn(&exe, "probe", &[action.to_string(), arg.to_string()], &spec)
            .expect("spawn");
        // Generous deadlines: a loaded CI machine must not turn a slow
        // probe into a wrong verdict.
        match w.greeting(Instant::now() + Duration::from_secs(20)) {
            Ok(Greeting::Ready) => {}
            other => panic!("no Ready: {other:?}"),
        }
        // The probe acts after a Run, like an executor.
        let run = ToWorker::Run {
            protocol: PROTOCOL_VERSION,
            program: String::new(),
            tools: vec![],
            limits: Limits::default(),
            globals: vec![],
            want_globals: false,
        };
        w.chan
            .send(&run, Some(Instant::now() + Duration::from_secs(20)))
            .expect("send Run");
        let r = w
            .chan
            .recv::<FromWorker>(Some(Instant::now() + Duration::from_secs(20)));
        let status = w.reap_by(Instant::now() + Duration::from_secs(5));
        let _ = w.kill_and_reap();
        match (r, status) {
            (Ok(FromWorker::Stdout(line)), _) => line,
            // The worker was killed by SIGSYS before reporting (the seccomp
            // filter kills on a syscall outside the allowlist; the jail's
            // pid 1 passes that on as exit 128 + 31): the action did not
            // happen. Nothing else counts: a probe that hangs or exits
            // without a report proves nothing, and says so.
            (Err(lackpy_worker::ipc::FrameError::Closed), Some(st))
                if st.signal() == Some(libc::SIGSYS) || st.code() == Some(128 + libc::SIGSYS) =>
            {
                format!("denied (worker killed by SIGSYS: {st:?})")
            }
            (r, st) => format!("no verdict: no report ({r:?}), exit {st:?}"),
        }
    }

    #[test]
    fn inferencer_worker_cannot_read_files_or_connect_elsewhere() {
        let endpoint = TcpListener::bind("127.0.0.1:0").expect("bind");
        let other = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = endpoint.local_addr().expect("addr").port();
        let other_port = other.local_addr().expect("addr").port();
        let r = probe(port, "connect", &port.to_string());
        assert!(
            r.starts_with("allowed"),
            "the endpoint port must be reachable: {r}"
        );
        for (action, arg) in [
            ("connect", other_port.to_string()),
            ("read_file", "/etc/passwd".to_string()),
            ("write_file", "/tmp/lackpy-inferencer-probe".to_string()),
            ("list_root", String::new()),
            ("execve", String::new()),
            ("fork", String::new()),
        ] {
            let r = probe(port, action, &arg);
            assert!(r.starts_with("denied"), "{action} {arg}: {r}");
        }
    }
}

/// `scripts/eval --fake`: the evaluation harness end to end against canned
/// model answers (the held-out intents over two workspaces, strict scores).
#[test]
fn eval_harness_with_fake_model() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("python3")
        .arg(root.join("scripts/eval"))
        .args([
            "--fake",
            "--cascade-only",
            "--json",
            "--min-accuracy",
            "0.95",
            "--bin",
        ])
        .arg(crate::util::bin())
        .env_remove("LACKPY_CONFIG")
        .output()
        .expect("python3 scripts/eval");
    let v = json(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c = &v["cascade"];
    assert!(
        c["overall"]["n"].as_u64().unwrap_or(0) >= 100,
        "{}",
        c["overall"]
    );
    assert_eq!(c["workspaces"].as_object().map(|m| m.len()), Some(2));
    assert!(
        c["tiers"]["model"]["n"].as_u64().unwrap_or(0) > 0,
        "{}",
        c["tiers"]
    );
    assert!(
        c["tiers"]["rule"]["n"].as_u64().unwrap_or(0) > 0,
        "{}",
        c["tiers"]
    );
    // The canned answers that need the correction retry still end correct.
    let results = c["results"].as_array().cloned().unwrap_or_default();
    assert!(
        results
            .iter()
            .any(|r| r["attempts"].as_u64() == Some(2) && r["score"] == 1),
        "no retried intent scored"
    );
    // Strict: only an equal value scores.
    assert!(results.iter().all(|r| (r["score"] == 1)
        == (r["ok"] == true
            && (r["value"] == r["expected"]
                || r["also_expected"]
                    .as_array()
                    .is_some_and(|a| a.contains(&r["value"]))))));
}

/// The real `__worker inferencer` role, jailed for port A and asked to call
/// a model on port B: landlock refuses the connection and nothing reaches B.
#[test]
fn inferencer_role_cannot_reach_another_port() {
    use lackpy_inferencer::http::{Endpoint, InferError, Message, Request, Role, Wire};
    use lackpy_inferencer::worker::{FromInferencer, ToInferencer, INFERENCER_PROTOCOL};
    use lackpy_supervisor::spawn::{self, ExeHandle, Greeting};

    let allowed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let other = Fake::start(vec![ollama("1")]);
    let other_addr: std::net::SocketAddr = other
        .url
        .trim_start_matches("http://")
        .parse()
        .expect("addr");
    let exe = ExeHandle::open(&crate::util::bin()).expect("exe");
    let spec = lackpy_inferencer::worker::jail_spec(allowed.local_addr().expect("addr").port(), 5);
    let mut w = spawn::spawn(&exe, "inferencer", &[], &spec).expect("spawn");
    assert!(matches!(
        w.greeting(Instant::now() + Duration::from_secs(5)),
        Ok(Greeting::Ready)
    ));
    let request = Request {
        endpoint: Endpoint {
            wire: Wire::OllamaGenerate,
            url: format!("{}/api/generate", other.url),
            model: "m".into(),
            api_key: None,
            stream: false,
            temperature: 0.2,
            max_tokens: 16,
            connect_timeout_ms: 1000,
            timeout_ms: 2000,
            retries: 0,
            max_response_bytes: 4096,
            pinned_addr: Some(other_addr),
            seed: None,
        },
        messages: vec![Message::new(Role::User, "# Task: x")],
        temperature: None,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    w.chan
        .send(
            &ToInferencer::Generate {
                protocol: INFERENCER_PROTOCOL,
                request,
            },
            Some(deadline),
        )
        .expect("send");
    let reply = w.chan.recv::<FromInferencer>(Some(deadline));
    let _ = w.kill_and_reap();
    match reply {
        Ok(FromInferencer::Generated(Err(InferError::Unreachable { detail, .. }))) => {
            assert!(
                detail.contains("ermission denied") || detail.contains("EACCES"),
                "{detail}"
            );
        }
        other_reply => panic!("expected a refused connection, got {other_reply:?}"),
    }
    std::thread::sleep(Duration::from_millis(100));
    assert!(other.requests().is_empty(), "the other port was reached");
}
