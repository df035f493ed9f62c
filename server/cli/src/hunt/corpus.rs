//! The persistent corpus of findings a hunt starts from and adds to: one folder per finding,
//! named by its signature's id, holding `finding.json` (what it is, when it was seen, whether
//! it is open or fixed) and `path.json` (a path that shows it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use flymc_core::outfile;
use flymc_core::pathfile::shorten;
use serde::{Deserialize, Serialize};

use super::report::Signature;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Open,
    Fixed,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    pub id: String,
    pub signature: Signature,
    pub system: String,
    pub workload: String,
    pub kind: String,
    pub message: String,
    pub state: State,
    pub first_seen: String,
    pub last_seen: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_since: Option<String>,
    pub strategy: String,
    pub seed: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("cannot read the corpus at {0}: {1}")]
    Read(String, std::io::Error),
    #[error("{0} is not a corpus finding ({1}); remove it or point --corpus elsewhere")]
    Bad(String, String),
    #[error("cannot write to the corpus at {0}: {1}")]
    Write(String, std::io::Error),
}

pub struct Corpus {
    pub dir: PathBuf,
    /// By id.
    pub entries: BTreeMap<String, Entry>,
}

impl Corpus {
    /// The corpus at `dir`; empty when the folder does not exist yet.
    pub fn load(dir: &Path) -> Result<Corpus, CorpusError> {
        let mut entries = BTreeMap::new();
        let read = |e: std::io::Error| CorpusError::Read(dir.display().to_string(), e);
        if dir.exists() {
            for item in std::fs::read_dir(dir).map_err(read)? {
                let item = item.map_err(read)?;
                let file = item.path().join("finding.json");
                if !item.path().is_dir() || !file.is_file() {
                    continue;
                }
                let text =
                    flymc_model::bounded::read_text(&file, flymc_model::bounded::MAX_CONFIG_BYTES)
                        .map_err(|e| read(e.into()))?;
                let bad = |why: String| CorpusError::Bad(file.display().to_string(), why);
                let entry: Entry = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
                // The id names files in the corpus and the output folder: it must be one a
                // hunt writes, and this folder's own, before it is used as a path.
                let folder = item.file_name();
                if !is_id(&entry.id) || folder.to_str() != Some(entry.id.as_str()) {
                    return Err(bad(format!(
                        "its id {:?} is not 16 lowercase hex digits naming its folder {:?}",
                        shorten(&entry.id),
                        folder
                    )));
                }
                entries.insert(entry.id.clone(), entry);
            }
        }
        Ok(Corpus {
            dir: dir.to_path_buf(),
            entries,
        })
    }

    pub fn path_file(&self, id: &str) -> PathBuf {
        self.dir.join(id).join("path.json")
    }

    /// Store `entry`, and its path file copied from `path` when given.
    pub fn put(&mut self, entry: Entry, path: Option<&Path>) -> Result<(), CorpusError> {
        if !is_id(&entry.id) {
            return Err(CorpusError::Bad(
                format!("finding {:?}", shorten(&entry.id)),
                "its id is not 16 lowercase hex digits".into(),
            ));
        }
        let folder = self.dir.join(&entry.id);
        let write = |e: std::io::Error| CorpusError::Write(folder.display().to_string(), e);
        std::fs::create_dir_all(&folder).map_err(write)?;
        if let Some(path) = path.filter(|p| *p != self.path_file(&entry.id)) {
            outfile::copy_atomically(path, &self.path_file(&entry.id)).map_err(write)?;
        }
        let text = serde_json::to_string_pretty(&entry).expect("an entry serializes") + "\n";
        outfile::write_atomically(&folder.join("finding.json"), text.as_bytes()).map_err(write)?;
        self.entries.insert(entry.id.clone(), entry);
        Ok(())
    }
}

/// Whether `id` is a finding's id as hunts write them ([`super::signature::id`]): 16 lowercase
/// hex digits, so it is safe as a file name.
pub fn is_id(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}
