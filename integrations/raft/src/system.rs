//! `raft` and `raft-asyncraft`: real Raft clusters, one node program per node (openraft's
//! current release, or async-raft 0.6.1 with its apply-before-match bug), started as local
//! processes with their own data directories. The node programs and what they report are
//! described at the top of this crate; this is how flymc runs them.

use std::path::PathBuf;
use std::time::Duration;

use flymc_model::{Property, Symmetry, System, Target, TargetError, Workload};
use flymc_real::cluster::{find_program, NodeCommand};
use flymc_real::{ClientRequest, RealConfig, RealOptions, RealTarget};
use serde_json::{Map, Value};

use crate::Params;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// openraft (system `raft`).
    OpenRaft,
    /// async-raft 0.6.1 (system `raft-asyncraft`).
    AsyncRaft,
}

#[derive(Clone, Debug)]
pub struct RaftSystem {
    flavor: Flavor,
    program: Option<PathBuf>,
    options: RealOptions,
}

impl RaftSystem {
    /// The node program is looked up next to the running executable.
    pub fn new(flavor: Flavor) -> RaftSystem {
        RaftSystem {
            flavor,
            program: None,
            options: RealOptions::default(),
        }
    }

    /// Runs under the user's options (the event server's address).
    pub fn options(mut self, options: RealOptions) -> RaftSystem {
        self.options = options;
        self
    }

    pub fn with_program(flavor: Flavor, program: impl Into<PathBuf>) -> RaftSystem {
        RaftSystem {
            flavor,
            program: Some(program.into()),
            options: RealOptions::default(),
        }
    }

    fn program(&self) -> Result<PathBuf, TargetError> {
        match &self.program {
            Some(p) => Ok(p.clone()),
            None => find_program(match self.flavor {
                Flavor::OpenRaft => crate::OPENRAFT_PROGRAM,
                Flavor::AsyncRaft => crate::ASYNCRAFT_PROGRAM,
            })
            .map_err(|e| TargetError::Other(e.to_string())),
        }
    }

    /// The [`RealConfig`] for `w`.
    pub fn config(&self, w: &Workload) -> Result<RealConfig, TargetError> {
        let params = Params::parse(self.name(), w)?;
        let program = self.program()?;
        let args = params.args(w.nodes);
        let clients = params
            .writes
            .iter()
            .map(|wr| {
                let mut fields = Map::new();
                fields.insert("value".into(), Value::from(wr.value));
                ClientRequest {
                    to: wr.to,
                    name: "write".into(),
                    fields,
                    payload: Value::Null,
                }
            })
            .collect();
        let mut cfg = RealConfig::new(self.name(), move |_| {
            let mut c = NodeCommand::new(&program);
            c.args = args.clone();
            c
        })
        .clients(clients)
        .notices(true)
        .crash_loses_outbound(self.crash_loses_sent())
        .options(&self.options);
        if let Some(ms) = params.settle_timeout_ms {
            cfg = cfg.settle_timeout(Duration::from_millis(ms));
        }
        Ok(cfg)
    }
}

impl System for RaftSystem {
    fn name(&self) -> &'static str {
        match self.flavor {
            Flavor::OpenRaft => "raft",
            Flavor::AsyncRaft => "raft-asyncraft",
        }
    }

    /// A crashed node's unsent requests die with it (a Raft RPC that never left is lost);
    /// [`RaftSystem::config`] configures the nodes so.
    fn crash_loses_sent(&self) -> bool {
        true
    }

    fn description(&self) -> &'static str {
        match self.flavor {
            Flavor::OpenRaft => "real openraft 0.9 nodes (processes on 127.0.k.x) whose network is flymc's hook",
            Flavor::AsyncRaft => "real async-raft 0.6.1 nodes, with its apply-before-match bug (fixed in openraft 0.6.3)",
        }
    }

    fn target(&self, w: &Workload) -> Result<Box<dyn Target>, TargetError> {
        Ok(Box::new(RealTarget::with_backend(
            self.config(w)?,
            Box::new(self.options.local_backend()),
        )))
    }

    fn snapshots(&self) -> bool {
        self.options.can_snapshot()
    }

    fn properties(&self, _w: &Workload) -> Vec<Box<dyn Property>> {
        crate::properties::all()
    }

    /// Raft's properties, shared with raft-sim, and their view here (both flavours).
    fn sources(&self) -> &'static [&'static str] {
        &[
            "integrations/raft/properties/src/lib.rs",
            "integrations/raft/src/properties.rs",
        ]
    }

    fn symmetry(&self, w: &Workload) -> Symmetry {
        crate::symmetry(w)
    }

    fn sets_file(&self) -> Option<&'static str> {
        Some(match self.flavor {
            Flavor::OpenRaft => crate::SETS,
            Flavor::AsyncRaft => crate::SETS_ASYNCRAFT,
        })
    }

    fn message_kinds(&self) -> Option<Vec<&'static str>> {
        Some(crate::MESSAGE_KINDS.to_vec())
    }

    /// The nodes report term, vote, role, log and applied entries, not the libraries'
    /// replication progress: the state-event cache must not stand in for running an event.
    fn states_are_complete(&self) -> bool {
        false
    }
}
