//! The behavior sets' table, each file's `ENTRY` in catalogue order (a file of its own:
//! the loader reaches the table through the registry, and the registry must not depend
//! on the module that holds the loader).

use super::DatasetEntry;

/// The behavior sets, in catalogue order.
pub const ENTRIES: &[DatasetEntry] = &[
    super::demo::ENTRY,
    super::leakage_demo::ENTRY,
    super::remote::ENTRY,
    super::advbench::ENTRY,
    super::harmbench::ENTRY,
    super::jbb_behaviors::ENTRY,
    super::xstest::ENTRY,
    super::or_bench::ENTRY,
    super::strongreject::ENTRY,
    super::ailuminate::ENTRY,
    super::simple_safety_tests::ENTRY,
    super::cyberseceval_frr::ENTRY,
    super::cyberseceval_interpreter::ENTRY,
    super::imported::ENTRY,
];
