//! `flymc-demo-node`: a tiny counter protocol on the Rust hook, for flymc's event-server tests
//! and `flymc bench hooks`. Start it under flymc (it reads FLYMC_* from the environment).
//!
//! Counter mode (default), state `{sum, saved, count, acks, ticks, boots, trace}`:
//! - client `add {value, fanout}`: `sum += value`; with `fanout`, sends `echo {value}` to every
//!   other node. With `--persist`, `sum` is written to `$FLYMC_DATA_DIR/state.json` behind a
//!   crash point named `state`, and survives crash and reboot. With `--checked` as well, a copy
//!   goes to `check.json` behind a second crash point `check`, and a node that finds the two
//!   files disagreeing at startup refuses to start (exit status 1): a crash between the two
//!   writes leaves a node that cannot restart, the shape of a real crash-recovery bug.
//! - message `echo {value}`: `sum += value`; with `--ack`, answers `ack` to the sender.
//! - message `ack`: `acks += 1`. Timers (armed at startup with `--timer NAME`): `ticks += 1`.
//! - client `rearm`: cancels this node's startup timers that have not fired and arms them anew.
//! - client `fail {panic}`: records an error through `Hook::error` (with `panic = true`, a
//!   thread of the node panics instead); both show in the state's `exceptions`.
//! - client `hang`: never reports done (tests hang detection); client `exit {code}`: exits.
//!
//! Bench mode (`--mode bench`), state `{pings, send_us}`: `ping {left}` (client or message)
//! sends `ping {left - 1}` to the next node until `left` is 0; `send_us` is how long the last
//! intercepted send took in the hook.

use std::path::PathBuf;
use std::time::Instant;

use flymc_hook::{Delivery, Hook, HookError, Kind};
use serde_json::{json, Value};

#[derive(Default)]
struct Args {
    bench: bool,
    timers: Vec<String>,
    ack: bool,
    persist: bool,
    checked: bool,
}

fn args() -> Result<Args, String> {
    let mut a = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--mode" => match it.next().as_deref() {
                Some("bench") => a.bench = true,
                Some("counter") => a.bench = false,
                other => return Err(format!("--mode counter|bench, not {other:?}")),
            },
            "--timer" => a
                .timers
                .push(it.next().ok_or("--timer needs a name")?.to_string()),
            "--ack" => a.ack = true,
            "--persist" => a.persist = true,
            "--checked" => a.checked = true,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(a)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let code = match args() {
        Err(e) => {
            eprintln!("flymc-demo-node: {e}");
            2
        }
        Ok(a) => match run(a).await {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("flymc-demo-node: {e}");
                1
            }
        },
    };
    std::process::exit(code);
}

async fn run(a: Args) -> Result<(), HookError> {
    let hook = Hook::from_env().await?;
    if a.bench {
        bench(hook).await
    } else {
        counter(hook, a).await
    }
}

struct Counter {
    sum: i64,
    /// The sum on disk: part of the state, since it decides what a reboot starts from.
    saved: i64,
    count: u64,
    acks: u64,
    ticks: u64,
    boots: u64,
    trace: Vec<String>,
}

impl Counter {
    fn state(&self) -> Value {
        json!({
            "sum": self.sum,
            "saved": self.saved,
            "count": self.count,
            "acks": self.acks,
            "ticks": self.ticks,
            "boots": self.boots,
            "trace": self.trace,
        })
    }
}

fn data_file(hook: &Hook, name: &str) -> Option<PathBuf> {
    hook.config().data_dir.as_ref().map(|d| d.join(name))
}

fn read_json(file: &Option<PathBuf>) -> Value {
    file.as_ref()
        .and_then(|f| std::fs::read(f).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

fn write_json(f: &std::path::Path, v: &Value) {
    if let Err(e) = std::fs::write(f, v.to_string()) {
        eprintln!("flymc-demo-node: cannot write {}: {e}", f.display());
        std::process::exit(1);
    }
}

async fn counter(hook: Hook, a: Args) -> Result<(), HookError> {
    let file = data_file(&hook, "state.json");
    let check = data_file(&hook, "check.json").filter(|_| a.checked);
    let saved = read_json(&file);
    let copy = read_json(&check);
    if a.checked && !copy.is_null() && copy["sum"] != saved["sum"] {
        eprintln!(
            "flymc-demo-node: refusing to start: state.json has sum {}, check.json has sum {}",
            saved["sum"], copy["sum"]
        );
        std::process::exit(1);
    }
    let mut c = Counter {
        sum: saved["sum"].as_i64().unwrap_or(0),
        saved: saved["sum"].as_i64().unwrap_or(0),
        count: 0,
        acks: 0,
        ticks: 0,
        boots: saved["boots"].as_u64().map_or(0, |b| b + 1),
        trace: Vec::new(),
    };
    let save = |c: &mut Counter| {
        c.saved = c.sum;
        if let Some(f) = &file {
            write_json(f, &json!({"sum": c.sum, "boots": c.boots}));
        }
    };
    let save_copy = |c: &Counter| {
        if let Some(f) = &check {
            write_json(f, &json!({ "sum": c.sum }));
        }
    };
    save(&mut c);
    save_copy(&c);
    let mut timers = Vec::new();
    for t in &a.timers {
        timers.push(hook.timer(t, json!({})).await?);
    }
    hook.ready(&c.state()).await?;
    loop {
        let d = hook.next().await?;
        let value = d.field_i64("value").unwrap_or(0);
        match (d.kind, d.name.as_str()) {
            (Kind::Client, "add") => {
                c.sum += value;
                c.count += 1;
                c.trace.push(format!("add:{value}"));
                if d.fields.get("fanout").and_then(Value::as_bool) == Some(true) {
                    for to in (0..hook.nodes()).filter(|&n| n != hook.node()) {
                        hook.send(to, "echo", json!({ "value": value }), json!(null))
                            .await?;
                    }
                }
                if a.persist {
                    hook.crash_point("state", json!({ "sum": c.sum }), &c.state())
                        .await?;
                    save(&mut c);
                    if a.checked {
                        hook.crash_point("check", json!({ "sum": c.sum }), &c.state())
                            .await?;
                        save_copy(&c);
                    }
                }
            }
            (Kind::Message, "echo") => {
                c.sum += value;
                c.count += 1;
                c.trace
                    .push(format!("echo:{value}@n{}", d.from.unwrap_or(usize::MAX)));
                if a.ack {
                    if let Some(from) = d.from {
                        hook.send(from, "ack", json!({}), json!(null)).await?;
                    }
                }
                if a.persist {
                    save(&mut c);
                }
            }
            (Kind::Message, "ack") => {
                c.acks += 1;
                c.trace
                    .push(format!("ack@n{}", d.from.unwrap_or(usize::MAX)));
            }
            (Kind::Timeout, name) => {
                c.ticks += 1;
                c.trace.push(format!("timer:{name}"));
            }
            (Kind::Client, "rearm") => {
                for (id, name) in timers.iter_mut().zip(&a.timers) {
                    hook.cancel(*id).await?;
                    *id = hook.timer(name, json!({})).await?;
                }
                c.trace.push("rearm".into());
            }
            (Kind::Client, "fail") => {
                if d.fields.get("panic").and_then(Value::as_bool) == Some(true) {
                    // A thread of the node panics; the node goes on, as a server whose worker
                    // died would.
                    let _ = std::thread::spawn(|| panic!("demo: asked to panic")).join();
                } else {
                    hook.error("demo-error", format!("asked to fail ({value})"));
                }
                c.trace.push("fail".into());
            }
            (Kind::Client, "hang") => std::future::pending::<()>().await,
            (Kind::Client, "exit") => std::process::exit(d.field_i64("code").unwrap_or(3) as i32),
            _ => unknown(&d),
        }
        hook.done(&c.state()).await?;
    }
}

fn unknown(d: &Delivery) {
    eprintln!(
        "flymc-demo-node: ignoring {:?} `{}` ({})",
        d.kind, d.name, d.id
    );
}

async fn bench(hook: Hook) -> Result<(), HookError> {
    let mut pings = 0u64;
    let mut send_us = 0u64;
    hook.ready(&json!({ "pings": pings, "send_us": send_us }))
        .await?;
    let next = (hook.node() + 1) % hook.nodes();
    loop {
        let d = hook.next().await?;
        if d.name == "ping" {
            pings += 1;
            let left = d.field_i64("left").unwrap_or(0);
            if left > 0 {
                let t = Instant::now();
                hook.send(next, "ping", json!({ "left": left - 1 }), json!(null))
                    .await?;
                send_us = t.elapsed().as_micros() as u64;
            }
        } else {
            unknown(&d);
        }
        hook.done(&json!({ "pings": pings, "send_us": send_us }))
            .await?;
    }
}
