//! `flymc systems`: the systems flymc can check, built in and under ./systems/.

use anyhow::Result;
use flymc_model::escape;

use crate::systems;

pub fn run() -> Result<u8> {
    let (listed, left_out) = systems::listed_with_errors();
    // A system file's name and description are the file's text.
    for s in listed {
        let name = escape::line(s.name());
        println!("{name:<16} {}", escape::line(&s.about().description));
    }
    for (file, e) in left_out {
        let why = escape::line(&e.to_string()).into_owned();
        eprintln!(
            "flymc: {} left out: {why}",
            escape::line(&file.display().to_string())
        );
    }
    Ok(0)
}
