//! The injection surface's machinery: the sandboxed toolkits, the checks, the agent loop,
//! the injection templates and the scenario suites.
//!
//! An injection run maps onto the ordinary engine: a scenario suite is a
//! [`crate::datasets::Dataset`] whose behaviors carry their scenario, an injection
//! ([`crate::injections`]) is an [`crate::attack::Attack`] whose `run` is the agent loop,
//! and `injection_detector` is a [`crate::judge::Judge`]. Caching, resume, budgets,
//! ordering, CIs and reports therefore work unchanged.

pub mod agent;
pub mod agent_loop;
pub mod agent_pages;
pub mod agentdojo;
pub mod bundled;
pub mod check;
pub mod env;
pub mod mcp;
pub mod mcp_health;
pub mod sandbox;
pub mod scenario_file;
pub mod suite;
pub mod templates;
