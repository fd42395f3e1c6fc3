//! The model HTTP client and the cascade against real HTTP servers on
//! 127.0.0.1, started by each test (a `TcpListener` in a thread with
//! scripted answers). Every test bounds its timeouts: nothing may hang.

use lackpy_inferencer::config::{InferenceConfig, Plugin, ProviderConfig};
use lackpy_inferencer::corpus::Corpus;
use lackpy_inferencer::http::{
    generate, Endpoint, InferError, Message, Request, Role, Secret, Wire,
};
use lackpy_inferencer::pipeline::{Delegator, InProcess};
use lackpy_inferencer::prompt::ToolDoc;
use lackpy_inferencer::templates::TemplateSet;
use lackpy_policy::{ErrorInfo, Grade, Limits, Namespace, ToolEntry};
use std::time::{Duration, Instant};

#[path = "support/fake_server.rs"]
mod fake_server;
use fake_server::{closed_port_url, Reply, Server};

fn endpoint(wire: Wire, base: &str) -> Endpoint {
    Endpoint {
        wire,
        url: wire.url(base),
        model: "m".into(),
        api_key: None,
        stream: false,
        temperature: 0.2,
        max_tokens: 64,
        connect_timeout_ms: 500,
        timeout_ms: 2000,
        retries: 0,
        max_response_bytes: 64 * 1024,
        pinned_addr: None,
        seed: None,
    }
}

/// A server that answers once with `parts` as chunks, `pause` apart, and
/// a streaming endpoint of `wire` for it.
fn streaming(wire: Wire, parts: Vec<String>, pause: Duration) -> (Server, Endpoint) {
    let srv = Server::start(vec![Reply::Chunks(parts, pause)]);
    let mut ep = endpoint(wire, &srv.url);
    ep.stream = true;
    (srv, ep)
}

fn req(ep: Endpoint) -> Request {
    Request {
        endpoint: ep,
        messages: vec![
            Message::new(Role::System, "SYS"),
            Message::new(Role::User, "# Task: read a.txt"),
        ],
        temperature: None,
    }
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or(serde_json::Value::Null)
}

#[test]
fn ollama_generate_plain() {
    let srv = Server::start(vec![Reply::Body(
        200,
        r#"{"response":"read_file('a.txt')","done":true}"#.into(),
    )]);
    let g = generate(&req(endpoint(Wire::OllamaGenerate, &srv.url))).expect("generate");
    assert_eq!(g.text, "read_file('a.txt')");
    assert_eq!(g.tries, 1);
    let seen = srv.seen();
    assert_eq!(seen[0].path, "/api/generate");
    let body = json(&seen[0].body);
    assert_eq!(body["model"], "m");
    assert_eq!(body["system"], "SYS");
    assert_eq!(body["prompt"], "# Task: read a.txt");
    assert_eq!(body["stream"], false);
}

#[test]
fn ollama_chat_streaming_ndjson() {
    let parts = vec![
        "{\"message\":{\"role\":\"assistant\",\"content\":\"read_\"},\"done\":false}\n".to_string(),
        "{\"message\":{\"role\":\"assistant\",\"content\":\"file('a\"},\"done\":false}\n{\"message\":{\"role\":\"assistant\",\"content\":\".txt')\"},".to_string(),
        "\"done\":false}\n{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true}\n".to_string(),
    ];
    let (srv, ep) = streaming(Wire::OllamaChat, parts, Duration::from_millis(20));
    let g = generate(&req(ep)).expect("generate");
    assert_eq!(g.text, "read_file('a.txt')");
    let seen = srv.seen();
    assert_eq!(seen[0].path, "/api/chat");
    let body = json(&seen[0].body);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["stream"], true);
}

#[test]
fn openai_plain_with_bearer_key() {
    let srv = Server::start(vec![Reply::Body(
        200,
        r#"{"choices":[{"message":{"role":"assistant","content":"len(find_files('*'))"}}]}"#.into(),
    )]);
    let mut ep = endpoint(Wire::OpenAi, &srv.url);
    ep.api_key = Some(Secret::new("sk-test-123"));
    let g = generate(&req(ep)).expect("generate");
    assert_eq!(g.text, "len(find_files('*'))");
    let seen = srv.seen();
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert!(seen[0]
        .headers
        .to_ascii_lowercase()
        .contains("authorization: bearer sk-test-123"));
}

#[test]
fn openai_sse_stream() {
    let parts = vec![
        ": keep-alive\n\n".to_string(),
        "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n".to_string(),
        "data: {\"choices\":[{\"delta\":{\"content\":\"x = 1\\n\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n".to_string(),
        "data: [DONE]\n\n".to_string(),
    ];
    let (_srv, ep) = streaming(Wire::OpenAi, parts, Duration::from_millis(10));
    assert_eq!(generate(&req(ep)).expect("generate").text, "x = 1\nx");
}

#[test]
fn anthropic_plain_and_stream() {
    let srv = Server::start(vec![
        Reply::Body(200, r#"{"content":[{"type":"text","text":"read_file("},{"type":"text","text":"'a.txt')"}],"stop_reason":"end_turn"}"#.into()),
        Reply::Chunks(
            vec![
                "event: message_start\ndata: {\"type\":\"message_start\"}\n\n".into(),
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"len(\"}}\n\n".into(),
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x)\"}}\n\n".into(),
                "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n".into(),
            ],
            Duration::from_millis(10),
        ),
    ]);
    let mut ep = endpoint(Wire::Anthropic, &srv.url);
    ep.api_key = Some(Secret::new("ant-key"));
    assert_eq!(
        generate(&req(ep.clone())).expect("plain").text,
        "read_file('a.txt')"
    );
    ep.stream = true;
    assert_eq!(generate(&req(ep)).expect("stream").text, "len(x)");
    let seen = srv.seen();
    assert_eq!(seen[0].path, "/v1/messages");
    let h = seen[0].headers.to_ascii_lowercase();
    assert!(h.contains("x-api-key: ant-key") && h.contains("anthropic-version: 2023-06-01"));
    let body = json(&seen[0].body);
    assert_eq!(body["system"], "SYS");
    assert_eq!(
        body["messages"].as_array().map(Vec::len),
        Some(1),
        "system is not a message for anthropic"
    );
}

#[test]
fn retries_5xx_then_succeeds() {
    let srv = Server::start(vec![
        Reply::Body(503, r#"{"error":"loading model"}"#.into()),
        Reply::Body(500, "oops".into()),
        Reply::Body(200, r#"{"response":"1","done":true}"#.into()),
    ]);
    let mut ep = endpoint(Wire::OllamaGenerate, &srv.url);
    ep.retries = 2;
    let g = generate(&req(ep)).expect("generate");
    assert_eq!((g.text.as_str(), g.tries), ("1", 3));
}

#[test]
fn persistent_5xx_ends_with_status_error() {
    let srv = Server::start(vec![
        Reply::Body(502, "bad gateway".into()),
        Reply::Body(502, "bad gateway".into()),
    ]);
    let mut ep = endpoint(Wire::OllamaGenerate, &srv.url);
    ep.retries = 1;
    let e = generate(&req(ep)).expect_err("must fail");
    assert!(matches!(&e, InferError::Status { status: 502, .. }), "{e}");
    assert_eq!(srv.seen().len(), 2);
}

#[test]
fn client_errors_are_not_retried_and_key_is_redacted() {
    let srv = Server::start(vec![
        Reply::Body(
            401,
            r#"{"error":{"message":"invalid key sk-secret-999"}}"#.into(),
        ),
        Reply::Body(200, "{}".into()),
    ]);
    let mut ep = endpoint(Wire::OpenAi, &srv.url);
    ep.retries = 3;
    ep.api_key = Some(Secret::new("sk-secret-999"));
    let e = generate(&req(ep.clone())).expect_err("must fail");
    let msg = e.to_string();
    assert!(
        msg.contains("401") && !msg.contains("sk-secret-999"),
        "{msg}"
    );
    assert!(!format!("{e:?} {ep:?}").contains("sk-secret-999"));
    assert_eq!(srv.seen().len(), 1);
}

#[test]
fn silent_server_times_out_quickly() {
    let srv = Server::start(vec![
        Reply::Silent(Duration::from_secs(3)),
        Reply::Silent(Duration::from_secs(3)),
    ]);
    let mut ep = endpoint(Wire::OllamaGenerate, &srv.url);
    ep.timeout_ms = 300;
    ep.retries = 1;
    let t0 = Instant::now();
    let e = generate(&req(ep)).expect_err("must time out");
    // The message reports the time really spent: two tries and a backoff.
    assert!(
        matches!(e, InferError::Timeout { timeout_ms, .. } if timeout_ms >= 600),
        "{e}"
    );
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
}

#[test]
fn stalled_stream_times_out() {
    let parts = vec![
        "{\"response\":\"x\",\"done\":false}\n".to_string(),
        "{\"response\":\"y\",\"done\":false}\n".to_string(),
    ];
    let (_srv, mut ep) = streaming(Wire::OllamaGenerate, parts, Duration::from_secs(2));
    ep.timeout_ms = 500;
    let t0 = Instant::now();
    let e = generate(&req(ep)).expect_err("must time out");
    assert!(matches!(e, InferError::Timeout { .. }), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(2));
}

#[test]
fn oversized_answer_is_cut() {
    let srv = Server::start(vec![Reply::Huge(4 * 1024 * 1024)]);
    let ep = endpoint(Wire::OllamaGenerate, &srv.url);
    let e = generate(&req(ep)).expect_err("too large");
    assert!(
        matches!(e, InferError::TooLarge { limit: 65536, .. }),
        "{e}"
    );
}

#[test]
fn oversized_stream_is_cut() {
    let line = format!("{{\"response\":\"{}\",\"done\":false}}\n", "x".repeat(4000));
    let (_srv, mut ep) = streaming(
        Wire::OllamaGenerate,
        vec![line; 40],
        Duration::from_millis(1),
    );
    ep.max_response_bytes = 32 * 1024;
    assert!(matches!(
        generate(&req(ep)),
        Err(InferError::TooLarge { .. })
    ));
}

#[test]
fn garbage_answers_are_clear_errors() {
    let srv = Server::start(vec![
        Reply::Body(200, "<html>not json</html>".into()),
        Reply::Body(200, r#"{"unexpected":"shape"}"#.into()),
        Reply::Body(200, r#"{"error":"model 'm' not found"}"#.into()),
        Reply::Chunks(
            vec!["data: {not json}\n\n".into()],
            Duration::from_millis(1),
        ),
        Reply::Chunks(vec![": only comments\n\n".into()], Duration::from_millis(1)),
    ]);
    let ep = endpoint(Wire::OllamaGenerate, &srv.url);
    let e1 = generate(&req(ep.clone())).expect_err("html");
    assert!(
        matches!(&e1, InferError::Garbage { .. }) && e1.to_string().contains("not JSON"),
        "{e1}"
    );
    assert!(matches!(
        generate(&req(ep.clone())),
        Err(InferError::Garbage { .. })
    ));
    let e3 = generate(&req(ep)).expect_err("remote");
    assert!(
        matches!(&e3, InferError::Remote { .. }) && e3.to_string().contains("not found"),
        "{e3}"
    );
    let mut sse = endpoint(Wire::OpenAi, &srv.url);
    sse.stream = true;
    assert!(matches!(
        generate(&req(sse.clone())),
        Err(InferError::Garbage { .. })
    ));
    assert!(matches!(
        generate(&req(sse)),
        Err(InferError::Garbage { .. })
    ));
}

#[test]
fn unreachable_names_the_url() {
    let gone = closed_port_url();
    let mut ep = endpoint(Wire::OllamaGenerate, &gone);
    ep.retries = 1;
    let t0 = Instant::now();
    let e = generate(&req(ep)).expect_err("refused");
    assert!(matches!(e, InferError::Unreachable { .. }), "{e}");
    assert!(
        e.to_string().contains(&format!("{gone}/api/generate")),
        "{e}"
    );
    assert!(t0.elapsed() < Duration::from_secs(3));
}

#[test]
fn pinned_address_skips_dns() {
    let srv = Server::start(vec![Reply::Body(
        200,
        r#"{"response":"1","done":true}"#.into(),
    )]);
    let addr: std::net::SocketAddr = srv.url.trim_start_matches("http://").parse().expect("addr");
    let mut ep = endpoint(
        Wire::OllamaGenerate,
        &format!("http://model.invalid:{}", addr.port()),
    );
    ep.pinned_addr = Some(addr);
    assert_eq!(generate(&req(ep)).expect("generate").text, "1");
}

// ------------------------------------------------------------ the cascade

fn file_ns() -> Namespace {
    let t = |name: &str, arg: &str| ToolEntry {
        name: name.into(),
        target: name.into(),
        args: vec![arg.into()],
        grade: Grade { w: 1, d: 0 },
    };
    Namespace {
        tools: vec![t("read_file", "path"), t("find_files", "pattern")],
    }
}

fn delegate_with(config: InferenceConfig, intent: &str) -> lackpy_inferencer::Delegation {
    let tools: Vec<ToolDoc> = ["read_file", "find_files"]
        .iter()
        .filter_map(|n| ToolDoc::builtin(n))
        .collect();
    let templates = TemplateSet::load(None).expect("templates");
    let corpus = Corpus::shipped().expect("corpus");
    let env = |_: &str| None;
    let ns = file_ns();
    let validate = move |p: &str| -> Result<(), Vec<ErrorInfo>> {
        lackpy_policy::validate(p, &ns, &Limits::default()).map(|_| ())
    };
    let d = Delegator::new(&config, &tools, &templates, &corpus, &env, &validate);
    d.delegate(intent, &mut InProcess)
}

fn provider(name: &str, plugin: Plugin, url: &str) -> ProviderConfig {
    let mut p = ProviderConfig::new(name, plugin);
    p.base_url = Some(url.to_string());
    p.model = Some("m".into());
    p.timeout = Duration::from_millis(1500);
    p.connect_timeout = Duration::from_millis(300);
    p.retries = 0;
    p
}

#[test]
fn cascade_retry_with_hints_then_next_provider_over_http() {
    // Small model: a fenced program using open(), then (after the hint) an import.
    let small = Server::start(vec![
        Reply::Body(
            200,
            r#"{"response":"```python\nf = open('a.txt')\nf.read()\n```","done":true}"#.into(),
        ),
        Reply::Body(
            200,
            r#"{"response":"import os\nos.listdir('.')","done":true}"#.into(),
        ),
    ]);
    // Bigger model (OpenAI wire): a valid cell wrapped in prose.
    let big = Server::start(vec![Reply::Body(
        200,
        r#"{"choices":[{"message":{"content":"Here is the cell:\n```\ncontent = read_file('a.txt')\ncontent.upper()\n```\nDone."}}]}"#.into(),
    )]);
    let config = InferenceConfig {
        order: vec![
            provider("small", Plugin::Ollama, &small.url),
            provider("big", Plugin::OpenAi, &big.url),
        ],
        promote_after: 3,
        examples: 6,
        promote_unconfirmed: false,
    };
    let d = delegate_with(config, "shout the text of a.txt");
    assert_eq!(
        d.program.as_deref(),
        Some("content = read_file('a.txt')\ncontent.upper()")
    );
    assert_eq!(d.provider.as_deref(), Some("big"));
    assert_eq!(d.providers_tried(), ["small", "small", "big"]);
    assert!(d.attempts[0].error.is_some() && d.attempts[1].error.is_some());
    // The retry carried the previous answer, the error with its line, and the hint.
    let retry = json(&small.seen()[1].body);
    let prompt = retry["prompt"].as_str().unwrap_or("");
    assert!(prompt.contains("f = open('a.txt')"), "{prompt}");
    assert!(prompt.contains("line "), "{prompt}");
    assert!(
        prompt.contains("read_file(path) instead of open()"),
        "{prompt}"
    );
    // The first prompt: namespace, retrieved examples, no prohibitions.
    let first = json(&small.seen()[0].body);
    let system = first["system"].as_str().unwrap_or("");
    assert!(system.contains("read_file(path: str) -> str") && system.contains("# Task:"));
    assert!(!system.contains("write_file") && !system.contains("import"));
}

#[test]
fn cascade_all_down_is_a_clear_error() {
    let gone = closed_port_url();
    let srv = Server::start(vec![Reply::Body(500, "x".into())]);
    let config = InferenceConfig {
        order: vec![
            provider("gone", Plugin::Ollama, &gone),
            provider("broken", Plugin::Ollama, &srv.url),
        ],
        promote_after: 3,
        examples: 6,
        promote_unconfirmed: false,
    };
    let t0 = Instant::now();
    let d = delegate_with(config, "summarise the notes");
    assert!(d.program.is_none());
    let e = d.error.expect("error");
    assert_eq!(e.type_name, "InferenceFailed");
    assert!(
        e.message.contains(gone.trim_start_matches("http://")) && e.message.contains("500"),
        "{}",
        e.message
    );
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn malformed_http_is_a_clear_error() {
    let mut flood = b"HTTP/1.1 200 OK\r\n".to_vec();
    for _ in 0..20_000 {
        flood.extend_from_slice(b"X-Pad: yyyyyyyy\r\n");
    }
    let srv = Server::start(vec![
        Reply::Raw(b"SSH-2.0-OpenSSH\r\n\r\n".to_vec()),
        Reply::Raw(flood),
        Reply::Raw(Vec::new()),
        Reply::Raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_vec()),
        Reply::Raw(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"resp".to_vec()),
    ]);
    let ep = endpoint(Wire::OllamaGenerate, &srv.url);
    let msgs: Vec<String> = (0..5)
        .map(|_| {
            generate(&req(ep.clone()))
                .map(|g| g.text)
                .unwrap_or_else(|e| e.to_string())
        })
        .collect();
    assert!(msgs[0].contains("not an HTTP answer"), "{}", msgs[0]);
    assert!(msgs[1].contains("headers too large"), "{}", msgs[1]);
    assert!(msgs[2].contains("without answering"), "{}", msgs[2]);
    assert!(msgs[3].contains("bad chunk size"), "{}", msgs[3]);
    assert!(
        msgs[4].contains("before the end of the body"),
        "{}",
        msgs[4]
    );
}

#[test]
fn chunk_extensions_and_trailers() {
    let body = "{\"response\":\"ok\",\"done\":true}";
    let (a, b) = body.split_at(10);
    let raw = format!(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x};name=v\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\nX-Trailer: 1\r\n\r\n",
        a.len(),
        b.len()
    );
    let srv = Server::start(vec![Reply::Raw(raw.into_bytes())]);
    let g = generate(&req(endpoint(Wire::OllamaGenerate, &srv.url))).expect("generate");
    assert_eq!(g.text, "ok");
}

#[test]
fn ollama_falls_back_to_the_other_api_on_404() {
    let srv = Server::start(vec![
        Reply::Body(404, "404 page not found".into()),
        Reply::Body(
            200,
            r#"{"message":{"role":"assistant","content":"1"},"done":true}"#.into(),
        ),
    ]);
    let g = generate(&req(endpoint(Wire::OllamaGenerate, &srv.url))).expect("generate");
    assert_eq!(g.text, "1");
    let seen = srv.seen();
    assert_eq!(
        (seen[0].path.as_str(), seen[1].path.as_str()),
        ("/api/generate", "/api/chat")
    );
    assert!(json(&seen[1].body)["messages"].is_array());
}

#[test]
fn unrequested_stream_is_still_read() {
    let body = "{\"response\":\"a\",\"done\":false}\n{\"response\":\"b\",\"done\":true}\n";
    let srv = Server::start(vec![Reply::Body(200, body.into())]);
    assert_eq!(
        generate(&req(endpoint(Wire::OllamaGenerate, &srv.url)))
            .expect("generate")
            .text,
        "ab"
    );
}

/// A 429 with `Retry-After: 1` is retried after about a second (not the
/// 200 ms backoff); the answer's prompt-token count is reported; the seed
/// and temperature go into the request.
#[test]
fn retry_after_seed_and_prompt_tokens() {
    let srv = Server::start(vec![
        Reply::Raw(
            b"HTTP/1.1 429 Too Many\r\nRetry-After: 1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
                .to_vec(),
        ),
        Reply::Body(
            200,
            "{\"choices\":[{\"message\":{\"content\":\"1\"}}],\"usage\":{\"prompt_tokens\":321}}"
                .into(),
        ),
    ]);
    let mut ep = endpoint(Wire::OpenAi, &srv.url);
    ep.retries = 1;
    ep.seed = Some(42);
    let t0 = Instant::now();
    let g = generate(&req(ep)).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        t0.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(
        (g.text.as_str(), g.prompt_tokens, g.tries),
        ("1", Some(321), 2)
    );
    let body = &srv.seen()[1].body;
    assert!(body.contains("\"seed\":42"), "{body}");
    // Ollama: the seed goes into options; prompt_eval_count is the count.
    let srv = Server::start(vec![Reply::Body(
        200,
        "{\"response\":\"x\",\"done\":true,\"prompt_eval_count\":77}".into(),
    )]);
    let mut ep = endpoint(Wire::OllamaGenerate, &srv.url);
    ep.seed = Some(5);
    let g = generate(&req(ep)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(g.prompt_tokens, Some(77));
    assert!(
        srv.seen()[0].body.contains("\"seed\":5"),
        "{}",
        srv.seen()[0].body
    );
}
