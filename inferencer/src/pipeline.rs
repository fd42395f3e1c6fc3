//! The cascade: providers in `[inference] order`, each tried until one
//! yields a program that validates.
//!
//! Templates and rules cost nothing. A model provider gets one attempt with
//! the retrieved-example prompt and, when the answer does not validate, one
//! correction retry (previous answer + errors with lines + deterministic
//! hints); then the next provider. Every attempt is recorded with its raw
//! answer, cleaned program and error, for `delegate --json`'s `attempts`.
//!
//! The model call goes through [`ModelCaller`], so the same pipeline runs
//! with the jailed inferencer worker, in-process HTTP, or a test double.

use crate::clean::clean_answer;
use crate::config::{InferenceConfig, Plugin, ProviderConfig, ProviderEndpoint};
use crate::corpus::Corpus;
use crate::hints::hints_for;
use crate::http::{Generation, InferError, Request};
use crate::prompt::{
    different_messages, first_messages, retry_messages, system_prompt_with, ToolDoc,
};
use crate::templates::{rules, TemplateSet};
use lackpy_policy::{first_error, ErrorInfo, ErrorKind};
use serde::Serialize;

/// Longest intent accepted, in bytes. Why: an intent is a sentence; anything
/// larger is not one, and it would be copied into every prompt.
pub const MAX_INTENT_BYTES: usize = 8 * 1024;

/// Largest model answer considered, in bytes. Why: a lackpy cell is a few
/// lines (programs are capped at 64 KiB by default); an answer this large is
/// garbage, and it would be parsed and echoed in `attempts`.
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// How much of a raw answer `attempts` keeps, in bytes.
pub const MAX_RAW_ECHO_BYTES: usize = 16 * 1024;

/// At most `n` bytes of `s`, cut at a char boundary, marked when cut.
fn echo(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_string();
    }
    let end = s.floor_char_boundary(n);
    format!("{}… [{} more bytes]", &s[..end], s.len() - end)
}

/// Makes one model call. Implemented by the jailed worker client, by
/// [`InProcess`], and by test doubles.
pub trait ModelCaller {
    /// Send `req` and return the model's raw text.
    ///
    /// # Errors
    /// [`InferError`] when no text came back.
    fn call(&mut self, req: &Request) -> Result<Generation, InferError>;
}

/// Calls the model from this process ([`crate::http::generate`]).
#[derive(Debug, Default)]
pub struct InProcess;

impl ModelCaller for InProcess {
    fn call(&mut self, req: &Request) -> Result<Generation, InferError> {
        crate::http::generate(req)
    }
}

/// One provider attempt, as `delegate --json` reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    /// Provider name (from `order`).
    pub provider: String,
    /// The model's raw answer (or the template/rule name's program).
    pub raw: Option<String>,
    /// The cleaned program.
    pub program: Option<String>,
    /// Why it was not used (validation error, or the provider's failure).
    pub error: Option<ErrorInfo>,
    /// Wall time of the attempt, ms.
    pub duration_ms: u64,
    /// Prompt tokens the endpoint reported for this call, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// From a template or rule (whose misfit does not decide the final error).
    #[serde(skip)]
    pub zero_cost: bool,
}

impl Attempt {
    /// The error's type name (`ForbiddenName`, `InferenceFailed`, ...), if it failed.
    pub fn error_type(&self) -> Option<&str> {
        self.error.as_ref().map(|e| e.type_name.as_str())
    }
}

/// What the caller's run check says about a program that validated.
#[derive(Debug, Clone, PartialEq)]
pub enum RunCheck {
    /// Use it: it ran ok, or it has effects and is run once by the caller
    /// (never re-run automatically).
    Accept,
    /// It ran (it has no effects) and failed: record the error and let the
    /// cascade go on.
    Failed(ErrorInfo),
}

/// The outcome of the cascade.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delegation {
    /// The program that validated, if any.
    pub program: Option<String>,
    /// The provider that produced it.
    pub provider: Option<String>,
    /// Every attempt, in order.
    pub attempts: Vec<Attempt>,
    /// Set when no program validated.
    pub error: Option<ErrorInfo>,
}

/// Everything the cascade needs besides the model caller.
pub struct Delegator<'a> {
    /// `[inference]`.
    pub config: &'a InferenceConfig,
    /// The profile's tools as the prompt shows them.
    pub tools: &'a [ToolDoc],
    /// Templates (workspace then shipped).
    pub templates: &'a TemplateSet,
    /// The example corpus.
    pub corpus: &'a Corpus,
    /// Environment lookup for API keys.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// The validator: `Ok` when the program may run under the profile.
    pub validate: &'a dyn Fn(&str) -> Result<(), Vec<ErrorInfo>>,
    /// A bounded view of the workspace as text ([`crate::context`]), put
    /// into the prompt of providers whose `workspace_context` allows it.
    pub context: Option<&'a str>,
    /// Runs a validated program when that is safe (no effects) and says
    /// whether to keep it; `None`: every validated program is accepted.
    pub run: Option<&'a dyn Fn(&str) -> RunCheck>,
}

fn ms(since: std::time::Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A provider failure as an attempt's `error` (kind `tool`, type `InferenceFailed`).
pub fn inference_error(message: impl Into<String>) -> ErrorInfo {
    // Messages can carry text from the endpoint or the worker: bound them.
    ErrorInfo::new(
        ErrorKind::Tool,
        "InferenceFailed",
        echo(&message.into(), 2048),
    )
}

impl Delegation {
    /// The provider of every attempt, in order.
    pub fn providers_tried(&self) -> Vec<&str> {
        self.attempts.iter().map(|a| a.provider.as_str()).collect()
    }
}

impl<'a> Delegator<'a> {
    /// A delegator with no workspace view and no run check (set
    /// [`Delegator::context`] and [`Delegator::run`] to add them).
    pub fn new(
        config: &'a InferenceConfig,
        tools: &'a [ToolDoc],
        templates: &'a TemplateSet,
        corpus: &'a Corpus,
        env: &'a dyn Fn(&str) -> Option<String>,
        validate: &'a dyn Fn(&str) -> Result<(), Vec<ErrorInfo>>,
    ) -> Self {
        Delegator {
            config,
            tools,
            templates,
            corpus,
            env,
            validate,
            context: None,
            run: None,
        }
    }

    /// Run the cascade for `intent`.
    pub fn delegate(&self, intent: &str, caller: &mut dyn ModelCaller) -> Delegation {
        let mut d = Delegation {
            program: None,
            provider: None,
            attempts: Vec::new(),
            error: None,
        };
        let intent = intent.trim();
        if intent.is_empty() || intent.len() > MAX_INTENT_BYTES {
            let msg = if intent.is_empty() {
                "the intent is empty".to_string()
            } else {
                format!("the intent is longer than {MAX_INTENT_BYTES} bytes")
            };
            d.error = Some(ErrorInfo::new(ErrorKind::Validation, "BadIntent", msg));
            return d;
        }
        for p in &self.config.order {
            let done = match p.plugin {
                Plugin::Templates => self.zero_cost(&mut d, &p.name, self.templates.find(intent)),
                Plugin::Rules => self.zero_cost(&mut d, &p.name, rules(intent)),
                _ => self.model(&mut d, p, intent, caller),
            };
            if done {
                return d;
            }
        }
        d.error = Some(self.final_error(&d.attempts));
        d
    }

    fn final_error(&self, attempts: &[Attempt]) -> ErrorInfo {
        let last_validation = attempts
            .iter()
            .rev()
            .filter(|a| !a.zero_cost)
            .filter_map(|a| a.error.as_ref())
            .find(|e| e.kind == ErrorKind::Validation);
        if let Some(e) = last_validation {
            let mut e = e.clone();
            e.message = format!(
                "no provider produced a valid program; last error: {}",
                e.message
            );
            return e;
        }
        let failures: Vec<String> = attempts
            .iter()
            .filter_map(|a| {
                a.error
                    .as_ref()
                    .map(|e| format!("{}: {}", a.provider, e.message))
            })
            .collect();
        if failures.is_empty() {
            let mut e = inference_error("no provider produced a program for this intent");
            e.hint = Some("configure a model provider in [inference] (default: Ollama at http://localhost:11434)".into());
            e
        } else {
            inference_error(format!(
                "no provider produced a program: {}",
                failures.join("; ")
            ))
        }
    }

    /// Templates and rules: a match that validates wins; a match that does
    /// not validate is recorded and the cascade moves on; no match is silent.
    fn zero_cost(
        &self,
        d: &mut Delegation,
        provider: &str,
        found: Option<(String, String)>,
    ) -> bool {
        let Some((name, program)) = found else {
            return false;
        };
        let t0 = std::time::Instant::now();
        let res = self.check(&program, &[]);
        let ok = res.is_ok();
        d.attempts.push(Attempt {
            provider: provider.to_string(),
            raw: Some(format!("# {name}\n{program}")),
            program: Some(program.clone()),
            error: res.err().map(first_error),
            duration_ms: ms(t0),
            prompt_tokens: None,
            zero_cost: true,
        });
        if ok {
            d.program = Some(program);
            d.provider = Some(provider.to_string());
        }
        ok
    }

    /// Shape check, validator, then the caller's run check.
    fn check(&self, program: &str, tool_names: &[String]) -> Result<(), Vec<ErrorInfo>> {
        if let Some((ty, msg)) = crate::clean::shape_problem(program, tool_names) {
            return Err(vec![ErrorInfo::new(ErrorKind::Validation, ty, msg)]);
        }
        (self.validate)(program)?;
        if let Some((msg, hint)) = crate::clean::literal_arg_problem(program, self.tools) {
            let mut e = ErrorInfo::new(ErrorKind::Validation, "ArgumentError", msg);
            e.hint = Some(hint);
            return Err(vec![e]);
        }
        match self.run.map(|r| r(program)) {
            Some(RunCheck::Failed(e)) => Err(vec![e]),
            _ => Ok(()),
        }
    }

    fn model(
        &self,
        d: &mut Delegation,
        p: &ProviderConfig,
        intent: &str,
        caller: &mut dyn ModelCaller,
    ) -> bool {
        let endpoint = match p.endpoint(self.env) {
            Ok(Some(e)) => e,
            Ok(None) => return false,
            Err(e) => {
                d.attempts.push(Attempt {
                    provider: p.name.clone(),
                    raw: None,
                    program: None,
                    error: Some(inference_error(e.to_string())),
                    duration_ms: 0,
                    prompt_tokens: None,
                    zero_cost: false,
                });
                return false;
            }
        };
        let tool_names: Vec<String> = self.tools.iter().map(|t| t.name.clone()).collect();
        let allowed = |n: &str| tool_names.iter().any(|t| t == n);
        let context = self.context.filter(|_| p.context_enabled(&endpoint));
        let query = retrieval_query(intent, context);
        let examples = self.corpus.retrieve(&query, self.config.examples, &allowed);
        let system = system_prompt_with(self.tools, &examples, context);
        let mut messages = first_messages(&system, intent);
        // The files the task names, next to the task (a small model copies
        // the examples' paths unless the right ones are close by).
        if let (Some(ctx), Some(last)) = (context, messages.last_mut()) {
            let named = named_files(intent, ctx);
            if !named.is_empty() {
                last.content
                    .push_str(&format!("\n# Files: {}", named.join("; ")));
            }
        }
        let mut temperature = None;
        let mut rejected: Vec<String> = Vec::new();
        // One first answer, one correction retry, and one more call only
        // when the retry repeated a rejected cell.
        let mut calls = 0;
        while calls < 3 {
            calls += 1;
            let t0 = std::time::Instant::now();
            let req = Request {
                endpoint: endpoint.clone(),
                messages: messages.clone(),
                temperature,
            };
            let generation = match caller.call(&req) {
                Ok(g) => g,
                Err(e) => {
                    tracing::info!(provider = %p.name, error = %e, "model call failed");
                    d.attempts.push(Attempt {
                        provider: p.name.clone(),
                        raw: None,
                        program: None,
                        error: Some(inference_error(e.to_string())),
                        duration_ms: ms(t0),
                        prompt_tokens: None,
                        zero_cost: false,
                    });
                    return false;
                }
            };
            if generation.text.len() > MAX_ANSWER_BYTES {
                d.attempts.push(Attempt {
                    provider: p.name.clone(),
                    raw: Some(echo(&generation.text, MAX_RAW_ECHO_BYTES)),
                    program: None,
                    error: Some(inference_error(format!(
                        "the answer is larger than {MAX_ANSWER_BYTES} bytes"
                    ))),
                    duration_ms: ms(t0),
                    prompt_tokens: generation.prompt_tokens,
                    zero_cost: false,
                });
                return false;
            }
            let mut program = clean_answer(&generation.text);
            // wrong_output: a cell ending in `name = ...` or `print(x)` loses its value.
            if let Some(fixed) = crate::clean::ensure_result(&program) {
                program = fixed;
            }
            if let Some(fixed) = crate::clean::unprint_result(&program) {
                program = fixed;
            }
            if let Some(fixed) = crate::clean::collect_prints(&program) {
                program = fixed;
            }
            let repeated = rejected.iter().any(|r| same_code(r, &program));
            let res = self.check(&program, &tool_names);
            let errs = match res {
                Ok(()) => {
                    d.attempts.push(Attempt {
                        provider: p.name.clone(),
                        raw: Some(echo(&generation.text, MAX_RAW_ECHO_BYTES)),
                        program: Some(program.clone()),
                        error: None,
                        duration_ms: ms(t0),
                        prompt_tokens: generation.prompt_tokens,
                        zero_cost: false,
                    });
                    d.program = Some(program);
                    d.provider = Some(p.name.clone());
                    return true;
                }
                Err(errs) => errs,
            };
            let hints = hints_for(&program, &errs, &tool_names);
            d.attempts.push(Attempt {
                provider: p.name.clone(),
                raw: Some(echo(&generation.text, MAX_RAW_ECHO_BYTES)),
                program: Some(program.clone()),
                error: Some(first_error(errs.clone())),
                duration_ms: ms(t0),
                prompt_tokens: generation.prompt_tokens,
                zero_cost: false,
            });
            // A run-time failure goes back to the model only when the
            // workspace view is on for it (the error text may quote data).
            let runtime = errs.iter().any(|e| e.kind != ErrorKind::Validation);
            if runtime && context.is_none() {
                return false;
            }
            if calls == 1 {
                messages = retry_messages(&system, intent, &program, &errs, &hints);
                temperature = Some(p.retry_temperature);
            } else if repeated && calls == 2 {
                // A retry that repeats the rejected cell is wasted: ask
                // again, warmer, saying so.
                tracing::info!(provider = %p.name, "the retry repeated the rejected cell");
                messages =
                    different_messages(retry_messages(&system, intent, &program, &errs, &hints));
                temperature = Some((p.retry_temperature + 0.3).min(1.2));
            } else {
                break;
            }
            rejected.push(program);
        }
        false
    }
}

/// The retrieval query: the intent, plus the kind of each workspace file
/// the intent names (`orders` → `data/orders.csv` → `csv`), so a data
/// question finds the examples for its file format.
fn retrieval_query(intent: &str, context: Option<&str>) -> String {
    let Some(ctx) = context else {
        return intent.to_string();
    };
    let words: std::collections::BTreeSet<String> =
        crate::corpus::tokens(intent).into_iter().collect();
    let mut extra: Vec<&str> = Vec::new();
    for line in ctx.lines() {
        let Some(path) = line.strip_prefix("  ") else {
            continue;
        };
        if path.contains(char::is_whitespace) || path.ends_with(':') {
            continue;
        }
        let Some((stem, ext)) = path.rsplit_once('.') else {
            continue;
        };
        let named = crate::corpus::tokens(stem)
            .iter()
            .any(|t| words.contains(t));
        let kind = match ext {
            "py" => "python",
            "md" => "markdown",
            "csv" | "tsv" | "json" | "jsonl" | "ini" | "cfg" | "toml" | "log" | "txt" => ext,
            _ => continue,
        };
        if named && !extra.contains(&kind) {
            extra.push(kind);
        }
    }
    if extra.is_empty() {
        intent.to_string()
    } else {
        format!("{intent} {}", extra.join(" "))
    }
}

/// Workspace files of the view whose path shares a word with the intent,
/// each with its first line when the view shows one (a CSV's header): at
/// most 4.
fn named_files(intent: &str, ctx: &str) -> Vec<String> {
    let words: std::collections::BTreeSet<String> =
        crate::corpus::tokens(intent).into_iter().collect();
    let lines: Vec<&str> = ctx.lines().collect();
    let mut out: Vec<String> = Vec::new();
    for line in &lines {
        let Some(path) = line.strip_prefix("  ") else {
            continue;
        };
        if path.contains(char::is_whitespace) || !path.contains('.') {
            continue;
        }
        let named = crate::corpus::tokens(path)
            .iter()
            .any(|t| t != "txt" && t != "md" && t != "py" && words.contains(t));
        if !named || out.iter().any(|o| o.starts_with(path)) {
            continue;
        }
        // The head block: "path:" then indented lines, a table's layout
        // last, in parentheses.
        let block: Vec<&str> = lines
            .iter()
            .position(|l| *l == format!("{path}:"))
            .map(|j| {
                lines
                    .iter()
                    .skip(j + 1)
                    .take_while(|l| l.starts_with("  "))
                    .map(|l| l.trim())
                    .collect()
            })
            .unwrap_or_default();
        let layout = block
            .iter()
            .find(|l| l.starts_with('(') && l.ends_with(')'))
            .map(|l| &l[1..l.len() - 1]);
        out.push(match (layout, block.first()) {
            (Some(t), _) => format!("{path} ({t})"),
            (None, Some(h)) => format!("{path} (first line: {h})"),
            (None, None) => path.to_string(),
        });
        if out.len() >= 4 {
            break;
        }
    }
    out
}

/// Two programs that differ only in whitespace and comments.
fn same_code(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.lines()
            .map(|l| l.split(" #").next().unwrap_or("").trim().to_string())
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
            .replace(' ', "")
    };
    norm(a) == norm(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderConfig;
    use crate::http::Role;

    /// Answers from a script; records the requests.
    struct Script {
        answers: Vec<Result<String, InferError>>,
        seen: Vec<Request>,
    }

    impl ModelCaller for Script {
        fn call(&mut self, req: &Request) -> Result<Generation, InferError> {
            self.seen.push(req.clone());
            if self.answers.is_empty() {
                return Err(InferError::Worker("script exhausted".into()));
            }
            self.answers.remove(0).map(|text| Generation {
                text,
                elapsed_ms: 1,
                tries: 1,
                prompt_tokens: Some(100),
            })
        }
    }

    /// A fake validator: rejects `import`, `open(` and syntax errors.
    fn fake_validate(p: &str) -> Result<(), Vec<ErrorInfo>> {
        if p.contains("import") || p.contains("open(") {
            let mut e = ErrorInfo::new(
                ErrorKind::Validation,
                "ForbiddenName",
                "'open' is not available",
            );
            e.line = Some(1);
            return Err(vec![e]);
        }
        rustpython_parser::parse(p, rustpython_parser::Mode::Module, "<t>")
            .map(|_| ())
            .map_err(|e| {
                vec![ErrorInfo::new(
                    ErrorKind::Validation,
                    "SyntaxError",
                    e.error.to_string(),
                )]
            })
    }

    fn run(
        order: Vec<ProviderConfig>,
        intent: &str,
        answers: Vec<Result<String, InferError>>,
    ) -> (Delegation, Script) {
        run_in(order, 6, None, None, intent, answers)
    }

    /// The cascade over `order` (shipped templates and corpus, `examples`
    /// retrieved), with a workspace view and a run check when given.
    fn run_in(
        order: Vec<ProviderConfig>,
        examples: usize,
        context: Option<&str>,
        check: Option<&dyn Fn(&str) -> RunCheck>,
        intent: &str,
        answers: Vec<Result<String, InferError>>,
    ) -> (Delegation, Script) {
        let config = InferenceConfig {
            order,
            promote_after: 3,
            examples,
            promote_unconfirmed: false,
        };
        let tools: Vec<ToolDoc> = ["read_file", "find_files"]
            .iter()
            .filter_map(|n| ToolDoc::builtin(n))
            .collect();
        let templates = TemplateSet::load(None).unwrap_or_default();
        let corpus = Corpus::shipped().unwrap_or_else(|e| panic!("{e}"));
        let env = |_: &str| None;
        let mut del = Delegator::new(&config, &tools, &templates, &corpus, &env, &fake_validate);
        del.context = context;
        del.run = check;
        let mut s = Script {
            answers,
            seen: Vec::new(),
        };
        let d = del.delegate(intent, &mut s);
        (d, s)
    }

    /// One provider `x` answering `answers` in turn.
    fn run_x(intent: &str, answers: &[&str]) -> (Delegation, Script) {
        let answers = answers.iter().map(|a| Ok(a.to_string())).collect();
        run(vec![ollama("x")], intent, answers)
    }

    /// [`run_x`], checking that the first attempt failed with `error_type`.
    fn first_fails(intent: &str, answers: &[&str], error_type: &str) -> Delegation {
        let (d, _) = run_x(intent, answers);
        assert_eq!(d.attempts[0].error_type(), Some(error_type), "{intent}");
        d
    }

    /// The answer of an endpoint that refuses connections.
    fn refused() -> Result<String, InferError> {
        Err(InferError::Unreachable {
            url: "http://127.0.0.1:9/api/generate".into(),
            detail: "refused".into(),
        })
    }

    fn ollama(name: &str) -> ProviderConfig {
        ProviderConfig::new(name, Plugin::Ollama)
    }

    #[test]
    fn template_wins_without_model_call() {
        let (d, s) = run(
            InferenceConfig::default().order,
            "read notes/todo.txt",
            vec![],
        );
        assert_eq!(d.program.as_deref(), Some("read_file(\"notes/todo.txt\")"));
        assert_eq!(d.provider.as_deref(), Some("templates"));
        assert!(s.seen.is_empty());
    }

    #[test]
    fn retry_with_hints_then_success() {
        let (d, s) = run(
            vec![ollama("small")],
            "tell me what a.txt says about cats",
            vec![
                Ok("```python\nf = open('a.txt')\nf.read()\n```".into()),
                Ok("read_file('a.txt')".into()),
            ],
        );
        assert_eq!(d.program.as_deref(), Some("read_file('a.txt')"));
        assert_eq!(d.attempts.len(), 2);
        assert_eq!(
            d.attempts[0].program.as_deref(),
            Some("f = open('a.txt')\nf.read()")
        );
        let retry = &s.seen[1].messages;
        assert_eq!(retry.len(), 2);
        assert_eq!(retry[1].role, Role::User);
        assert!(
            retry[1].content.contains("line 1")
                && retry[1].content.contains("```python\nf = open('a.txt')")
                && retry[1]
                    .content
                    .contains("read_file(path) instead of open()"),
            "{}",
            retry[1].content
        );
        assert_eq!(s.seen[1].temperature, Some(0.6));
        // The first prompt carries retrieved examples and the namespace, no prohibitions.
        assert!(s.seen[0].messages[0].content.contains("# Task:"));
    }

    #[test]
    fn cascade_to_next_provider() {
        let (d, s) = run(
            vec![ollama("small"), ollama("big")],
            "summarise a.txt",
            vec![
                Ok("import os".into()),
                Ok("import sys".into()),
                Ok("read_file('a.txt')".into()),
            ],
        );
        assert_eq!(d.provider.as_deref(), Some("big"));
        assert_eq!(d.providers_tried(), ["small", "small", "big"]);
        assert_eq!(s.seen.len(), 3);
        assert!(d.error.is_none());
    }

    #[test]
    fn unreachable_then_validation_error_reported() {
        let (d, _) = run(
            vec![ollama("down"), ollama("bad")],
            "summarise a.txt",
            vec![refused(), Ok("import os".into()), Ok("import os".into())],
        );
        let e = d.error.unwrap_or_else(|| inference_error("none"));
        assert_eq!(e.kind, ErrorKind::Validation);
        assert!(
            e.message
                .starts_with("no provider produced a valid program"),
            "{}",
            e.message
        );
        assert_eq!(d.attempts[0].error_type(), Some("InferenceFailed"));
    }

    #[test]
    fn all_unreachable_names_url() {
        let (d, _) = run(vec![ollama("down")], "summarise a.txt", vec![refused()]);
        let e = d.error.unwrap_or_else(|| inference_error("none"));
        assert_eq!(
            (e.kind, e.type_name.as_str()),
            (ErrorKind::Tool, "InferenceFailed")
        );
        assert!(
            e.message.contains("http://127.0.0.1:9/api/generate"),
            "{}",
            e.message
        );
    }

    #[test]
    fn template_misfit_does_not_decide_the_final_error() {
        // The template matches but (here) does not validate; the model is down.
        let (d, _) = run(
            vec![
                ProviderConfig::new("templates", Plugin::Templates),
                ollama("down"),
            ],
            "open import.txt",
            vec![refused()],
        );
        assert_eq!(d.attempts.len(), 2);
        assert_eq!(
            d.attempts[0].error.as_ref().map(|e| e.kind),
            Some(ErrorKind::Validation)
        );
        assert_eq!(d.error.map(|e| e.kind), Some(ErrorKind::Tool));
    }

    #[test]
    fn bad_intents() {
        let (d, s) = run_x("   ", &[]);
        assert_eq!(d.error.map(|e| e.type_name), Some("BadIntent".into()));
        assert!(s.seen.is_empty());
        let (d, _) = run_x(&"x".repeat(MAX_INTENT_BYTES + 1), &[]);
        assert_eq!(d.error.map(|e| e.type_name), Some("BadIntent".into()));
    }

    #[test]
    fn huge_answer_is_refused_and_echo_bounded() {
        let (d, s) = run_x("do something", &[&"x".repeat(MAX_ANSWER_BYTES + 1)]);
        assert_eq!(s.seen.len(), 1, "no retry on a garbage-sized answer");
        assert!(d.attempts[0]
            .raw
            .as_ref()
            .is_some_and(|r| r.len() < MAX_RAW_ECHO_BYTES + 64));
        assert_eq!(echo("héllo", 2), "h… [5 more bytes]");
    }

    #[test]
    fn empty_answer_is_an_attempt() {
        let d = first_fails("do something", &["", "```\n```"], "EmptyProgram");
        // Two empty answers: the retry repeated the first, so one more call
        // (here the script is exhausted).
        assert_eq!(d.attempts.len(), 3);
        assert!(d.program.is_none());
    }

    #[test]
    fn comment_only_cell_is_not_a_program() {
        let d = first_fails(
            "summarise a.txt",
            &["# read a.txt and summarise it", "read_file('a.txt')"],
            "EmptyProgram",
        );
        assert_eq!(d.program.as_deref(), Some("read_file('a.txt')"));
    }

    #[test]
    fn constant_and_print_answers() {
        // A made-up constant is flagged; a trailing print(x) becomes x.
        let d = first_fails(
            "how many lines in a.txt",
            &["42", "print(len(read_file('a.txt').splitlines()))"],
            "NoToolCall",
        );
        assert_eq!(
            d.program.as_deref(),
            Some("len(read_file('a.txt').splitlines())")
        );
        let d = first_fails(
            "print each line of a.txt",
            &[
                // (A loop that prints is collected: see a_printing_loop_...)
                "for l in read_file('a.txt').splitlines():\n    n = len(l)",
                "read_file('a.txt').splitlines()",
            ],
            "NoResult",
        );
        assert!(d.program.is_some());
    }

    #[test]
    fn a_printing_loop_is_accepted_as_a_collecting_one() {
        let (d, s) = run_x(
            "the text files that mention cats",
            &["for p in find_files('*.txt'):\n    if 'cat' in read_file(p):\n        print(p)"],
        );
        assert_eq!(s.seen.len(), 1, "no retry");
        assert_eq!(
            d.program.as_deref(),
            Some("results = []\nfor p in find_files('*.txt'):\n    if 'cat' in read_file(p):\n        results.append(p)\nresults")
        );
    }

    #[test]
    fn repeated_retry_is_asked_again_differently() {
        let (d, s) = run_x(
            "summarise a.txt",
            &["import os", "import  os  # again", "read_file('a.txt')"],
        );
        assert_eq!(s.seen.len(), 3);
        assert!(s.seen[2].messages[1]
            .content
            .contains("Write a different cell"));
        assert!(s.seen[2].temperature > s.seen[1].temperature);
        assert_eq!(d.program.as_deref(), Some("read_file('a.txt')"));
        // A retry that differs gets no third call.
        let (_, s) = run_x("summarise a.txt", &["import os", "import sys", "x"]);
        assert_eq!(s.seen.len(), 2);
    }

    #[test]
    fn runtime_failure_falls_through_and_context_reaches_the_prompt() {
        // Programs reading missing.txt fail at run time.
        let run_check = |p: &str| {
            if p.contains("missing.txt") {
                RunCheck::Failed(ErrorInfo::new(
                    ErrorKind::Tool,
                    "FileNotFoundError",
                    "missing.txt: no such file",
                ))
            } else {
                RunCheck::Accept
            }
        };
        let (d, s) = run_in(
            vec![
                ProviderConfig::new("templates", Plugin::Templates),
                ollama("small"),
            ],
            2,
            Some("Workspace files:\n  notes/present.txt"),
            Some(&run_check),
            "read missing.txt",
            vec![
                Ok("read_file('missing.txt')".into()),
                Ok("read_file('notes/present.txt')".into()),
            ],
        );
        // The template's answer failed at run time: the model was asked.
        assert_eq!(d.attempts[0].provider, "templates");
        assert_eq!(d.attempts[0].error_type(), Some("FileNotFoundError"));
        assert!(s.seen[0].messages[0].content.contains("notes/present.txt"));
        // The model's first answer failed at run time too: retried with the error.
        assert!(s.seen[1].messages[1]
            .content
            .contains("missing.txt: no such file"));
        assert_eq!(d.program.as_deref(), Some("read_file('notes/present.txt')"));
    }

    #[test]
    fn retrieval_query_adds_the_kind_of_named_files() {
        let ctx = "Workspace files:\n  data/orders.csv\n  logs/server.log\n  README.md\nFirst lines of data files:\ndata/orders.csv:\n  id,qty";
        assert_eq!(
            retrieval_query("how many orders have status shipped", Some(ctx)),
            "how many orders have status shipped csv"
        );
        assert_eq!(
            retrieval_query("errors in the server log", Some(ctx)),
            "errors in the server log log"
        );
        assert_eq!(retrieval_query("anything", None), "anything");
    }

    #[test]
    fn files_named_by_the_task_go_next_to_it() {
        let ctx = "Workspace files:\n  data/orders.csv\n  notes/a.txt\nFirst lines of data files:\ndata/orders.csv:\n  id,qty\n  1,2";
        assert_eq!(
            named_files("total qty of the orders", ctx),
            ["data/orders.csv (first line: id,qty)"]
        );
        assert!(named_files("something else", ctx).is_empty());
        // A table's layout, when the view has one, stands for its first line.
        let ctx = "Workspace files:\n  data/orders.csv\nFirst lines of data files:\ndata/orders.csv:\n  id,qty\n  1,2\n  (fields split by \",\"; columns: 0 id, 1 qty)";
        assert_eq!(
            named_files("total qty of the orders", ctx),
            ["data/orders.csv (fields split by \",\"; columns: 0 id, 1 qty)"]
        );
    }
}
