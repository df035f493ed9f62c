//! How the `flymc` binary starts and ends around a command: logging, a closed stdout, usage
//! errors, and the exit code of what the command returned (an error as one line, a signal as
//! 128 + N after the nodes are cleaned up).

use std::process::ExitCode;

use flymc_model::escape;

/// Logs to stderr, filtered by `FLYMC_LOG` (default `warn`).
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FLYMC_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, not in a log file or a CI pipe.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// A reader that went away (`flymc workloads | head -3`) ends flymc the way it ends any Unix
/// tool, silently with SIGPIPE's status (141), after the nodes are cleaned up. Rust ignores
/// SIGPIPE, so the failed write surfaces as `println!`'s panic; restoring SIGPIPE's default
/// instead would kill flymc with its nodes still running.
pub fn exit_quietly_when_stdout_closes() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            flymc_real::cluster::cleanup_all();
            std::process::exit(141);
        }
        default_hook(info);
    }));
}

/// What clap could not parse: help and version to stdout with exit 0, usage errors to stderr
/// with exit 2. A bad value is one line, as flymc's own errors are, with the valid values
/// when there is a list of them.
pub fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if !e.use_stderr() {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    match e.kind() {
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            let text = e.render().to_string();
            let parts: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
                .collect();
            eprintln!("{}", parts.join(" "));
        }
        _ => {
            let _ = e.print();
        }
    }
    ExitCode::from(2)
}

/// The exit code of a command's result. After a signal the nodes were killed under whatever
/// ran: `run` said what it explored, other commands have nothing more to say.
pub fn code(result: anyhow::Result<u8>) -> ExitCode {
    if let Some(signal) = flymc_real::cluster::interrupted_by() {
        flymc_real::cluster::interruption_reported();
        flymc_real::cluster::wait_for_cleanup();
        return ExitCode::from(flymc_real::cluster::exit_code(signal));
    }
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // Errors quote files and nodes: escaped so they stay one inert line.
            eprintln!("error: {}", escape::line(&one_line(&e)));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes on one line.
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    let line = parts.join(": ").replace('\n', " ");
    match out_of_descriptors(&line) {
        Some(hint) => format!("{line}; {hint}"),
        None => line,
    }
}

/// What to do when an error comes from running out of file descriptors (EMFILE, ENFILE): the
/// OS's "Too many open files" names neither the limit nor the fix.
fn out_of_descriptors(line: &str) -> Option<String> {
    if line.contains("(os error 23)") {
        return Some(
            "the system ran out of open files (fs.file-max): close what holds them and run again"
                .into(),
        );
    }
    if !line.contains("(os error 24)") {
        return None;
    }
    let limit = flymc_real::eventserver::conns::descriptor_limit()
        .map_or("unlimited".into(), |n| n.to_string());
    Some(format!(
        "flymc ran out of file descriptors (its limit is {limit}): raise it with `ulimit -n` and run again"
    ))
}
