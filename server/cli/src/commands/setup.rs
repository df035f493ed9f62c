//! `flymc setup NAME`: install and build what a real system needs (`flymc setup zookeeper
//! [--docker]`), or CRIU for cluster snapshots (`flymc setup criu`); what each does is in
//! [`systems::SETUPS`].

use std::path::PathBuf;

use anyhow::Result;
use flymc_model::escape;

use crate::systems;

#[derive(clap::Args)]
pub struct SetupArgs {
    /// The system to set up, or `criu`.
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(
        systems::SETUPS.iter().map(|(name, _)| *name)
    ))]
    pub system: String,
    /// Also build the Docker image the docker backend runs (from nothing, no pull).
    #[arg(long)]
    pub docker: bool,
    /// zookeeper: build a variant of your own named NAME from --patch (and nothing else).
    #[arg(long, value_name = "NAME", requires = "patch")]
    pub variant: Option<String>,
    /// zookeeper: the unified diff (paths as in ZooKeeper's repository, `a/` and `b/`)
    /// applied to Debian's 3.8.0 source for --variant; the Java files it changes are
    /// recompiled with javac.
    #[arg(long, value_name = "FILE.diff", requires = "variant")]
    pub patch: Option<PathBuf>,
}

pub fn run(args: SetupArgs) -> Result<u8> {
    if let (Some(variant), Some(patch)) = (&args.variant, &args.patch) {
        return variant_from_patch(&args.system, variant, patch);
    }
    let (name, setup) = systems::SETUPS
        .iter()
        .find(|(name, _)| *name == args.system)
        .expect("clap checks the name against SETUPS");
    // Setup messages may echo what a file or a build printed.
    setup(args.docker, &mut |m| {
        println!("setup: {}", escape::lines(m))
    })
    .map_err(|e| anyhow::Error::msg(escape::line(&e).into_owned()))?;
    if *name == systems::CRIU {
        println!("setup: done; CRIU is ready for cluster snapshots");
    } else {
        println!("setup: done; try `flymc workloads {name}`, then `flymc run --system {name} --workload NAME`");
    }
    Ok(0)
}

/// `--variant NAME --patch FILE.diff`: a ZooKeeper variant of the user's.
fn variant_from_patch(system: &str, variant: &str, patch: &std::path::Path) -> Result<u8> {
    if system != flymc_zookeeper::SYSTEM_NAME {
        anyhow::bail!("--variant and --patch build ZooKeeper variants: use `flymc setup zookeeper --variant {variant} --patch FILE.diff`");
    }
    flymc_zookeeper::setup::build_variant(variant, patch, &mut |m| println!("setup: {m}"))
        .map_err(anyhow::Error::msg)?;
    println!("setup: done; run it with `flymc run --system zookeeper --param variant={variant} --workload NAME`");
    Ok(0)
}
