//! The engine's work the dashboard needs, in the dashboard's terms: recounting a
//! red-team run from its own transcripts (`gauntlet_web::verify::Recount`, the check
//! `gauntlet gate` makes) and the labelling session (`gauntlet_web::label::LabelStore`).
//! The dashboard declares both and does not depend on the engine; the commands that
//! start it (`serve`, `report --site`, `label --serve`) hand these in. The dashboard's
//! own tests compile this file too, so they run the dashboard as `gauntlet` does.

use gauntlet_engine::labels::{Label, LabelSession};
use gauntlet_engine::stored::StoredRun;
use gauntlet_engine::verify::recount_rows;
use gauntlet_results::stated::{Recounted, Stated};
use gauntlet_web::label::{LabelStore, RecordError, Sampled, StoreError, Tally};
use gauntlet_web::verify::{Recount, RecountError};
use std::path::Path;
use std::sync::Arc;

/// The engine's recount: the run reloaded from its own directory (its datasets looked
/// for there only), every metric recomputed from its transcripts.
struct EngineRecount;

impl Recount for EngineRecount {
    fn recount(&self, dir: &Path, rows: &[Stated]) -> Result<Recounted, RecountError> {
        let run = StoredRun::open(dir, Some(dir)).map_err(|e| RecountError::Open(Box::new(e)))?;
        recount_rows(&run, rows).map_err(|e| RecountError::Transcripts(Box::new(e)))
    }
}

/// The recount the dashboard checks red-team runs with.
pub(crate) fn recount() -> Arc<dyn Recount> {
    Arc::new(EngineRecount)
}

/// The engine's labelling session as the labelling page uses it.
pub(crate) struct Labels(pub(crate) LabelSession);

impl LabelStore for Labels {
    fn dir(&self) -> &Path {
        &self.0.run().dir
    }

    fn sample(&self) -> Vec<Sampled<'_>> {
        self.0
            .items()
            .iter()
            .map(|i| Sampled {
                id: &i.id,
                target: &i.source,
                attack: &i.attack,
                behavior: &i.behavior_id,
                prompt: &i.prompt,
                reply: &i.reply,
            })
            .collect()
    }

    fn label_of(&self, id: &str) -> Option<&'static str> {
        self.0.label_of(id).map(Label::as_str)
    }

    fn next_unlabelled(&self) -> Option<usize> {
        self.0.next_unlabelled().map(|(at, _)| at)
    }

    fn tally(&self) -> Tally {
        let p = self.0.progress();
        Tally {
            sample: p.sample,
            done: p.done,
            skipped: p.skipped,
        }
    }

    fn status_lines(&self) -> Result<Vec<String>, StoreError> {
        let cards = self.0.cards()?;
        Ok(self.0.status_lines(&cards))
    }

    fn record(&mut self, id: &str, label: &str) -> Result<(), RecordError> {
        let label = Label::parse(label).ok_or(RecordError::NotALabel)?;
        self.0
            .record(id, label)
            .map_err(|e| RecordError::NotInSample(Box::new(e)))
    }

    fn save(&mut self) -> Result<(), StoreError> {
        self.0.save()?;
        Ok(())
    }
}
