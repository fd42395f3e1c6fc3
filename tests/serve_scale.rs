//! Scale-out on one machine: three `lackpy serve --listen` replicas behind
//! haproxy (Debian's package) with affinity on `Mcp-Session-Id`
//! (scripts/deploy/haproxy.cfg). Eight clients run mixed programs (plain
//! runs and notebook cells) while one replica is killed and restarted: no
//! result is wrong, sessions on the killed replica end with a clear error
//! (404 Session not found, or a 502/503 from the proxy for the request in
//! flight), new sessions succeed, and the killed replica's workers are gone.

use crate::serve_http::{config, end_session, get, initialize, run, structured, Server, TOKEN_A};
use serde_json::json;
use std::net::Ipv4Addr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A free port on loopback address `ip` (bound and released).
fn free_port(ip: Ipv4Addr) -> u16 {
    std::net::TcpListener::bind((ip, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// Every descendant pid of `pid` now.
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent = std::collections::HashMap::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            // "pid (comm) S ppid ...": comm may hold spaces; split after ')'.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|x| x.parse::<u32>().ok());
            if let Some(pp) = ppid {
                parent.insert(p, pp);
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(x) = frontier.pop() {
        for (c, pp) in &parent {
            if *pp == x {
                out.push(*c);
                frontier.push(*c);
            }
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().next());
            state != Some("Z")
        })
        .unwrap_or(false)
}

struct Proxy(Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[derive(Default)]
struct Tally {
    ok: AtomicUsize,
    wrong: Mutex<Vec<String>>,
    ended_clearly: AtomicUsize,
    unclear: Mutex<Vec<String>>,
    sessions: AtomicUsize,
    sessions_after_restart: AtomicUsize,
    refused: AtomicUsize,
}

#[test]
fn three_replicas_behind_haproxy_survive_a_killed_replica() {
    assert!(
        Command::new("haproxy")
            .arg("-v")
            .output()
            .is_ok_and(|o| o.status.success()),
        "haproxy is required (apt-get install haproxy; scripts/test-deps installs it)"
    );
    let ws = crate::util::workspace(&[]);
    // Every listener on its own fresh 127.A.B.C, never 127.0.0.1: a connect
    // to a fixed port on a busy loopback can meet a TIME_WAIT entry of the
    // same 4-tuple and be refused (CI failed so on a replica's /readyz).
    // The proxy's address is the Host the replicas see: allowed.
    let front_ip = crate::util::fake_server::loopback_ip();
    let cfg = config(
        ws.path(),
        "drain_seconds = 5",
        &format!("allowed_hosts = [\"{front_ip}\"]"),
    );
    // Fixed ports for MCP and for health: the restarted replica comes back
    // on both, so the proxy's health check finds it again.
    let ports: Vec<(Ipv4Addr, u16, u16)> = (0..3)
        .map(|_| {
            let ip = crate::util::fake_server::loopback_ip();
            (ip, free_port(ip), free_port(ip))
        })
        .collect();
    let start = |(ip, p, m): (Ipv4Addr, u16, u16)| {
        Server::start_full(&cfg, &format!("{ip}:{p}"), &format!("{ip}:{m}"), &[])
    };
    let mut replicas: Vec<Option<Server>> = ports.iter().map(|pm| Some(start(*pm))).collect();
    let front = free_port(front_ip);
    let dir = tempfile::tempdir().expect("tempdir");
    let template = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/deploy/haproxy.cfg"
    ))
    .expect("haproxy.cfg");
    let servers: String = replicas
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let r = r.as_ref().expect("replica");
            let mport = r.metrics.rsplit(':').next().unwrap_or("0");
            format!(
                "    server r{i} {} check port {mport} inter 300ms fall 1 rise 2\n",
                r.addr
            )
        })
        .collect();
    let text = template
        .replace("@BIND@", &format!("{front_ip}:{front}"))
        .replace("@SERVERS@", &servers);
    let hcfg = dir.path().join("haproxy.cfg");
    std::fs::write(&hcfg, text).expect("write haproxy.cfg");
    let _proxy = Proxy(
        Command::new("haproxy")
            .arg("-f")
            .arg(&hcfg)
            .arg("-db")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start haproxy"),
    );
    let addr = format!("{front_ip}:{front}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(Instant::now() < deadline, "haproxy did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(800)); // health checks pass

    let tally = Arc::new(Tally::default());
    let stop = Arc::new(AtomicBool::new(false));
    let restarted = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..8)
        .map(|c| {
            let (tally, stop, restarted, addr) =
                (tally.clone(), stop.clone(), restarted.clone(), addr.clone());
            std::thread::spawn(move || {
                let mut n: i64 = c * 1000;
                while !stop.load(Ordering::SeqCst) {
                    let sid = match std::panic::catch_unwind(|| initialize(&addr, TOKEN_A)) {
                        Ok(s) => s,
                        Err(_) => {
                            // The proxy had no healthy replica for a moment.
                            std::thread::sleep(Duration::from_millis(100));
                            continue;
                        }
                    };
                    tally.sessions.fetch_add(1, Ordering::SeqCst);
                    if restarted.load(Ordering::SeqCst) {
                        tally.sessions_after_restart.fetch_add(1, Ordering::SeqCst);
                    }
                    // Up to 20 cells per session, alternating plain runs and
                    // notebook cells; then the session is ended (DELETE), as a
                    // well-behaved client does. Without that, every finished
                    // session held one of the client's 32 connection slots on
                    // its replica until the idle timeout: within a second all
                    // three replicas were full, the clients spun on 429s from
                    // `initialize`, and at the kill no session might be on
                    // replica 1 at all.
                    let mut live = true;
                    for k in 0..20 {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        n += 1;
                        let (r, want) = if k % 2 == 0 {
                            (
                                run(&addr, TOKEN_A, &sid, &format!("sum(range({n}))"), None),
                                json!(n * (n - 1) / 2),
                            )
                        } else {
                            let r1 = run(&addr, TOKEN_A, &sid, &format!("v = {n}"), Some("nb"));
                            if r1.status != 200 {
                                (r1, json!(null))
                            } else if structured(&r1)["ok"] != json!(true) {
                                // Refused (the client's quota is shared by
                                // all eight): v keeps its old value, so the
                                // next cell is not run against it.
                                tally.refused.fetch_add(1, Ordering::SeqCst);
                                continue;
                            } else {
                                (run(&addr, TOKEN_A, &sid, "v * 3", Some("nb")), json!(n * 3))
                            }
                        };
                        if r.status == 200 {
                            let v = structured(&r);
                            if v["value"] == want {
                                tally.ok.fetch_add(1, Ordering::SeqCst);
                                continue;
                            }
                            if v["ok"] == json!(false) && v["error"]["kind"] == json!("limit") {
                                tally.refused.fetch_add(1, Ordering::SeqCst);
                                continue;
                            }
                            // A run cut off by the kill is an error result, never a wrong value.
                            if v["ok"] == json!(false) || v.is_null() {
                                tally.ended_clearly.fetch_add(1, Ordering::SeqCst);
                                live = false;
                                break;
                            }
                            if let Ok(mut w) = tally.wrong.lock() {
                                w.push(format!("want {want}, got {v}"));
                            }
                            break;
                        }
                        let clear = (r.status == 404 && r.body.contains("Session not found"))
                            || r.status == 502
                            || r.status == 503
                            || r.status == 0;
                        if clear {
                            tally.ended_clearly.fetch_add(1, Ordering::SeqCst);
                        } else if let Ok(mut u) = tally.unclear.lock() {
                            u.push(format!("{} {}", r.status, r.body));
                        }
                        live = false;
                        break;
                    }
                    if live {
                        let d = end_session(&addr, TOKEN_A, &sid);
                        // 404: the session's replica was killed or restarted
                        // since the last cell; 502/503: the proxy had none.
                        let fine = d.status == 200
                            || d.status == 202
                            || d.status == 204
                            || d.status == 404
                            || d.status == 502
                            || d.status == 503
                            || d.status == 0;
                        if !fine {
                            if let Ok(mut u) = tally.unclear.lock() {
                                u.push(format!("DELETE: {} {}", d.status, d.body));
                            }
                        }
                    }
                }
            })
        })
        .collect();

    std::thread::sleep(Duration::from_secs(2));
    // Kill replica 1 outright (no drain), remember its workers.
    let victim = replicas[1].take().expect("replica 1");
    let pid = victim.child.id();
    let workers = descendants(pid);
    assert!(!workers.is_empty(), "replica 1 has warm workers");
    let mut victim = victim;
    let _ = victim.child.kill();
    let _ = victim.child.wait();
    drop(victim);
    std::thread::sleep(Duration::from_secs(1));
    let left: Vec<u32> = workers.iter().copied().filter(|p| alive(*p)).collect();
    assert!(
        left.is_empty(),
        "workers of the killed replica still running: {left:?}"
    );
    // Restart it on the same port.
    replicas[1] = Some(start(ports[1]));
    restarted.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::SeqCst);
    for c in clients {
        c.join().expect("client thread");
    }
    let summary = format!(
        "{} runs ok, {} refused by the quota, {} sessions ({} after restart), {} ended with a clear error",
        tally.ok.load(Ordering::SeqCst),
        tally.refused.load(Ordering::SeqCst),
        tally.sessions.load(Ordering::SeqCst),
        tally.sessions_after_restart.load(Ordering::SeqCst),
        tally.ended_clearly.load(Ordering::SeqCst)
    );
    let wrong = tally.wrong.lock().map(|w| w.clone()).unwrap_or_default();
    let unclear = tally.unclear.lock().map(|w| w.clone()).unwrap_or_default();
    assert!(wrong.is_empty(), "wrong results: {wrong:?} ({summary})");
    assert!(
        unclear.is_empty(),
        "unclear failures: {unclear:?} ({summary})"
    );
    assert!(
        tally.ok.load(Ordering::SeqCst) > 100,
        "too few runs: {summary}"
    );
    assert!(
        tally.ended_clearly.load(Ordering::SeqCst) > 0,
        "no session was on the killed replica? {summary}"
    );
    assert!(
        tally.sessions_after_restart.load(Ordering::SeqCst) > 0,
        "no new session after the restart: {summary}"
    );
    // Every replica answers again, and the proxy sent the restarted one work.
    for r in replicas.iter().flatten() {
        assert_eq!(get(&r.metrics, "/healthz").status, 200);
    }
    let m = get(
        &replicas[1].as_ref().expect("replica 1").metrics,
        "/metrics",
    );
    let runs: f64 = m
        .body
        .lines()
        .filter(|l| l.starts_with("lackpy_runs_total"))
        .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
        .sum();
    assert!(
        runs > 0.0,
        "the restarted replica got no runs through the proxy ({summary})"
    );
    eprintln!("scale-out: {summary}");
}
