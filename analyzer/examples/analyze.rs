//! `cargo run -p flymc-analyzer --example analyze -- --lang java SRC... [--annotations FILE]
//! [--system NAME] [--format json|text] [--out FILE] [--explain VAR]`: the library without the flymc CLI (for
//! trying the analyzer and timing it with a release build).

use std::path::PathBuf;
use std::process::ExitCode;

use flymc_analyzer::{analyze, AnalyzeOptions, Lang};

fn main() -> ExitCode {
    let mut lang = Lang::Java;
    let mut sources = Vec::new();
    let mut annotations = None;
    let mut system = "system".to_string();
    let mut format = "json".to_string();
    let mut out: Option<PathBuf> = None;
    let mut explain: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |what: &str| {
            args.next().unwrap_or_else(|| {
                eprintln!("error: {what} needs a value");
                std::process::exit(2)
            })
        };
        match a.as_str() {
            "--lang" => match val("--lang").parse() {
                Ok(l) => lang = l,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            },
            "--annotations" => annotations = Some(PathBuf::from(val("--annotations"))),
            "--system" => system = val("--system"),
            "--format" => format = val("--format"),
            "--out" => out = Some(PathBuf::from(val("--out"))),
            "--explain" => explain = Some(val("--explain")),
            _ => sources.push(PathBuf::from(a)),
        }
    }
    let opts = AnalyzeOptions {
        lang,
        sources,
        annotations,
        system,
    };
    match analyze(&opts) {
        Ok(a) => {
            let text = if let Some(var) = &explain {
                match a.explain(var) {
                    Ok(t) => t,
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            } else if format == "text" {
                a.to_text()
            } else {
                a.to_json()
            };
            match out {
                Some(p) => {
                    if let Err(e) = std::fs::write(&p, a.to_json()) {
                        eprintln!("error: cannot write {}: {e}", p.display());
                        return ExitCode::FAILURE;
                    }
                    if format == "text" {
                        print!("{text}");
                    }
                }
                None => print!("{text}"),
            }
            for g in a.gaps() {
                eprintln!("gap: {g}");
            }
            eprintln!("analysed in {:.3} s", a.elapsed.as_secs_f64());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
