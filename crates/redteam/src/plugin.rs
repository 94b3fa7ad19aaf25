//! What every registered plugin is: an [`Entry`] of its own file (`pub const ENTRY`)
//! holding its [`PluginInfo`] and its constructor. Its axis's `mod.rs` declares the file
//! and lists the entry in `ENTRIES`, the axis's table in catalogue order.

use crate::error::BuildError;
use gauntlet_core::params::PluginInfo;

/// One registered plugin: its [`PluginInfo`] (what `gauntlet list` and `validate` read)
/// and how a config's spec becomes the plugin.
#[derive(Clone, Copy)]
pub struct Entry<B> {
    pub info: PluginInfo,
    pub build: B,
}

/// What a constructor returns.
pub type Built<T> = Result<Box<T>, BuildError>;
