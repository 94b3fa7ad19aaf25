//! The context the timing and login rules read: what a deployment records as
//! expected, and the hour profiles it supports.

pub mod explain;
pub mod profile;
pub mod record;
pub mod when;
pub mod zone;
