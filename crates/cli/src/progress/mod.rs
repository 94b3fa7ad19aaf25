//! Progress on stderr, the one display of `gauntlet run` and `gauntlet exam`: a bar on a
//! terminal, plain periodic lines otherwise (logs, CI), nothing with `--quiet`.
//!
//! Rates and the ETA come from a [`Meter`](gauntlet_job::meter::Meter) (`gauntlet_job::meter`): moving averages over the last minute (or,
//! in a slow run, over the last few finished units), so a live run at a few units a
//! minute shows "2.4 units/min, 0.8 calls/s, eta 12m30s" instead of "0 units/s, eta 0s",
//! and an ETA it cannot know yet is "eta unknown", never 0. Model calls are counted as
//! they are made (the engine reports them about once a second while units run), so a
//! run whose first unit takes minutes still shows its calls going out.

mod exam;
mod terminal;

pub(crate) use exam::ExamProgress;
pub(crate) use terminal::for_terminal;
