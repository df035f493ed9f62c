//! `flymc-fuzz [--seconds N] [--seed S] [TARGET...]`: replay every target's kept crashes and
//! corpus, then mutate for N seconds in all (split between the targets); prints the inputs run
//! and the crashes found per target, keeps each crash under `fuzz/regressions/<target>/`, and
//! exits 1 when there was one.

use std::time::{Duration, Instant};

use flymc_fuzz::mutate::{mutate, Rng};
use flymc_fuzz::targets::{Runner, Target, ALL};
use flymc_fuzz::{files_in, regressions, root};

fn main() -> std::process::ExitCode {
    let mut seconds = 60u64;
    let mut seed = 1u64;
    let mut names = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let number = |v: Option<String>| v.and_then(|v| v.parse::<u64>().ok());
        match a.as_str() {
            "--seconds" => seconds = number(args.next()).unwrap_or(seconds),
            "--seed" => seed = number(args.next()).unwrap_or(seed),
            other => names.push(other.to_string()),
        }
    }
    let chosen: Vec<&Target> = ALL
        .iter()
        .filter(|t| names.is_empty() || names.iter().any(|n| n == t.name))
        .collect();
    if chosen.is_empty() {
        let valid: Vec<&str> = ALL.iter().map(|t| t.name).collect();
        eprintln!("flymc-fuzz: no such target; valid: {}", valid.join(", "));
        return std::process::ExitCode::from(2);
    }
    // Panics are counted and kept; their default message would only repeat them.
    std::panic::set_hook(Box::new(|_| {}));
    let each = Duration::from_secs(seconds) / chosen.len() as u32;
    let mut crashes = 0;
    for (k, t) in chosen.into_iter().enumerate() {
        let (runs, found) = fuzz(t, each, seed.wrapping_add(k as u64));
        println!("fuzz {}: {runs} inputs executed, {found} crashes", t.name);
        crashes += found;
    }
    println!("fuzz: {crashes} crashes in all");
    std::process::ExitCode::from(u8::from(crashes > 0))
}

/// The seeds: the target's corpus folder, its kept crashes, and the files the checkout ships.
fn corpus(t: &Target) -> Vec<Vec<u8>> {
    let root = root();
    let mut files = files_in(&root.join("fuzz/corpus").join(t.name));
    files.extend(files_in(&regressions(t.name)));
    for dir in t.shipped {
        files.extend(
            files_in(&root.join(dir))
                .into_iter()
                .filter(|f| f.extension().is_some_and(|e| e == t.ext)),
        );
    }
    // Larger files would be cut by the first mutation anyway, and are slow to run.
    files
        .iter()
        .filter_map(|f| std::fs::read(f).ok())
        .filter(|b| b.len() <= flymc_fuzz::mutate::MAX_INPUT)
        .collect()
}

/// Run `t` on its corpus, then on mutations of it until `budget` has passed: inputs run and
/// crashes kept.
fn fuzz(t: &Target, budget: Duration, seed: u64) -> (u64, u64) {
    let seeds = corpus(t);
    let mut runner = Runner::new().expect("a scratch folder");
    let mut rng = Rng::new(seed);
    let current = root().join("target/fuzz");
    let _ = std::fs::create_dir_all(&current);
    let current = current.join(format!("{}.current", t.name));
    let end = Instant::now() + budget;
    let (mut runs, mut found) = (0u64, 0u64);
    let mut queue: Vec<Vec<u8>> = seeds.clone();
    loop {
        let input = match queue.pop() {
            Some(i) => i,
            None if Instant::now() >= end => break,
            None if seeds.is_empty() => mutate(&mut rng, b"", &seeds),
            None => {
                let pick = rng.below(seeds.len());
                mutate(&mut rng, &seeds[pick], &seeds)
            }
        };
        // If this input aborts the process (a stack overflow), it is here to keep.
        let _ = std::fs::write(&current, &input);
        runs += 1;
        if let Err(why) = runner.run(t, &input) {
            found += 1;
            let dir = regressions(t.name);
            let _ = std::fs::create_dir_all(&dir);
            let file = dir.join(format!("crash-{:016x}", flymc_model::stable_hash(&input)));
            let _ = std::fs::write(&file, &input);
            println!(
                "fuzz {}: CRASH ({why}); input kept as {}",
                t.name,
                file.display()
            );
        }
    }
    (runs, found)
}
