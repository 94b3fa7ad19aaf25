//! Runs the rules over one tool definition, alone or beside other servers' tools.

use crate::finding::{Finding, Rule};
use crate::scan::{Inventory, scan_inventories};
use serde_json::Value;

pub(crate) fn findings_with(tool: Value, others: &[(&str, &[&str])]) -> Vec<Finding> {
    let mut invs = vec![Inventory::offline("s", vec![tool])];
    for (server, names) in others {
        let tools = names
            .iter()
            .map(|n| serde_json::json!({"name": n, "description": "x", "inputSchema": {"type": "object"}}))
            .collect();
        invs.push(Inventory::offline(server, tools));
    }
    scan_inventories(&invs)
        .findings
        .into_iter()
        .filter(|f| f.server == "s")
        .collect()
}

pub(crate) fn rules_of(tool: Value) -> Vec<Rule> {
    let mut r: Vec<Rule> = findings_with(tool, &[])
        .into_iter()
        .map(|f| f.rule)
        .collect();
    r.dedup();
    r
}

pub(crate) fn tool(description: &str) -> Value {
    serde_json::json!({"name": "t", "description": description, "inputSchema": {"type": "object", "properties": {}}})
}
