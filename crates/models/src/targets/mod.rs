//! Targets: the models a run can evaluate, one file per plugin.

pub mod reference;
