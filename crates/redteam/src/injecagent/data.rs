//! InjecAgent's published files, read and checked.
//!
//! * `tools.json`: a list of toolkits `{"toolkit", "tools": [{"name", "summary",
//!   "parameters": [{"name", "type", "description", "required"}], "returns",
//!   "exceptions"}]}`; a tool's full name is its toolkit's name followed by its own
//!   (`Gmail` + `SendEmail` = `GmailSendEmail`).
//! * `test_cases_{dh,ds}_{base,enhanced}.json`: a list of cases with the fields
//!   `User Instruction`, `User Tool`, `Tool Parameters` (a Python dict literal),
//!   `Thought`, `Tool Response` (the user tool's output, the attacker instruction
//!   inside), `Attacker Tools` (direct harm: the harmful tool; data stealing: the tool
//!   that fetches the data, then the email tool), `Attacker Instruction` and
//!   `Attack Type` (other fields, e.g. `Tool Response Template`, are not read).
//! * `attacker_simulated_responses.json`: `{"(TOOL,PARAMS)": "response"}`, the attacker
//!   tool's simulated output for the parameters an agent wrote (the paper's step 2).
//!
//! Every problem names the file, the case's index and the field.

use super::pyliteral;
use crate::datasets::DatasetError;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// A JSON value that keeps its objects' key order (a tool spec is shown to the model as
/// the file writes it).
#[derive(Debug, Clone, PartialEq)]
pub enum OJson {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<OJson>),
    Object(Vec<(String, OJson)>),
}

impl<'de> Deserialize<'de> for OJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OJson;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<OJson, E> {
                Ok(OJson::Null)
            }
            fn visit_none<E>(self) -> Result<OJson, E> {
                Ok(OJson::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<OJson, E> {
                Ok(OJson::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<OJson, E> {
                Ok(OJson::Number(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<OJson, E> {
                Ok(OJson::Number(n.into()))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<OJson, E> {
                serde_json::Number::from_f64(n)
                    .map(OJson::Number)
                    .ok_or_else(|| E::custom("a non-finite number"))
            }
            fn visit_str<E>(self, s: &str) -> Result<OJson, E> {
                Ok(OJson::String(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> Result<OJson, E> {
                Ok(OJson::String(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<OJson, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(OJson::Array(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<OJson, A::Error> {
                let mut v: Vec<(String, OJson)> = Vec::new();
                while let Some((k, x)) = a.next_entry::<String, OJson>()? {
                    // A repeated key keeps its first place and its last value (Python).
                    match v.iter_mut().find(|(have, _)| *have == k) {
                        Some(slot) => slot.1 = x,
                        None => v.push((k, x)),
                    }
                }
                Ok(OJson::Object(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl OJson {
    /// The field `k` of an object.
    pub fn get(&self, k: &str) -> Option<&OJson> {
        match self {
            OJson::Object(v) => v.iter().find(|(have, _)| have == k).map(|(_, x)| x),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            OJson::String(s) => Some(s),
            _ => None,
        }
    }

    /// Python's `json.dumps(self, indent=indent)`, in the object's own key order.
    pub fn write_py(&self, out: &mut String, indent: Option<usize>, level: usize) {
        use gauntlet_core::pyjson::{close, separator, write_value};
        match self {
            OJson::Null => out.push_str("null"),
            OJson::Bool(b) => write_value(out, &Value::Bool(*b), indent, level),
            OJson::Number(n) => write_value(out, &Value::Number(n.clone()), indent, level),
            OJson::String(s) => out.push_str(&gauntlet_core::pyjson::string(s)),
            OJson::Array(v) if v.is_empty() => out.push_str("[]"),
            OJson::Object(v) if v.is_empty() => out.push_str("{}"),
            OJson::Array(v) => {
                out.push('[');
                for (i, x) in v.iter().enumerate() {
                    separator(out, i, indent, level + 1);
                    x.write_py(out, indent, level + 1);
                }
                close(out, indent, level);
                out.push(']');
            }
            OJson::Object(v) => {
                out.push('{');
                for (i, (k, x)) in v.iter().enumerate() {
                    separator(out, i, indent, level + 1);
                    out.push_str(&gauntlet_core::pyjson::string(k));
                    out.push_str(": ");
                    x.write_py(out, indent, level + 1);
                }
                close(out, indent, level);
                out.push('}');
            }
        }
    }
}

/// One parameter of a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolParam {
    pub name: String,
    /// `string`, `integer`, `number`, `boolean`, `array`, `object`, as the file says.
    pub kind: String,
    pub description: String,
    pub required: bool,
}

/// One tool of `tools.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// Toolkit name + tool name.
    pub name: String,
    pub summary: String,
    pub parameters: Vec<ToolParam>,
    /// The tool's object as the file writes it, `name` replaced by the full name: what
    /// the ReAct prompt lists.
    pub spec: OJson,
}

impl Tool {
    /// The tool as a function-calling schema (`type: object`, one property per
    /// parameter with its type and description, the required ones listed). Types other
    /// than JSON Schema's are sent as strings; an array takes items of any type.
    pub fn schema(&self) -> Value {
        let mut props = serde_json::Map::new();
        let mut required = Vec::new();
        for p in &self.parameters {
            let kind = match p.kind.as_str() {
                k @ ("string" | "integer" | "number" | "boolean" | "object" | "array") => k,
                _ => "string",
            };
            let mut prop = serde_json::json!({"type": kind, "description": p.description});
            if kind == "array" {
                prop["items"] = serde_json::json!({});
            }
            props.insert(p.name.clone(), prop);
            if p.required {
                required.push(Value::String(p.name.clone()));
            }
        }
        serde_json::json!({"type": "object", "properties": props, "required": required})
    }
}

/// Every tool of `tools.json`, by full name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tools(pub BTreeMap<String, Tool>);

fn err(source: &str, msg: impl Into<String>) -> DatasetError {
    DatasetError::new(source, msg)
}

/// Parses `tools.json`.
pub fn parse_tools(bytes: &[u8], source: &str) -> Result<Tools, DatasetError> {
    let kits: OJson = serde_json::from_slice(bytes).map_err(|e| {
        err(
            source,
            format!(
                "line {} column {}: {e}; expected a JSON list of toolkits",
                e.line(),
                e.column()
            ),
        )
    })?;
    let OJson::Array(kits) = kits else {
        return Err(err(
            source,
            "expected a JSON list of toolkits `[{\"toolkit\", \"tools\": [...]}]`",
        ));
    };
    let mut out = BTreeMap::new();
    for (k, kit) in kits.iter().enumerate() {
        let Some(kit_name) = kit.get("toolkit").and_then(OJson::as_str) else {
            return Err(err(
                source,
                format!("toolkits[{k}] has no string `toolkit`"),
            ));
        };
        let Some(OJson::Array(tools)) = kit.get("tools") else {
            return Err(err(
                source,
                format!("toolkit `{kit_name}` (toolkits[{k}]) has no `tools` list"),
            ));
        };
        for (t, tool) in tools.iter().enumerate() {
            let at = format!("toolkit `{kit_name}` tools[{t}]");
            let Some(own) = tool.get("name").and_then(OJson::as_str) else {
                return Err(err(source, format!("{at} has no string `name`")));
            };
            let name = format!("{kit_name}{own}");
            let summary = tool
                .get("summary")
                .and_then(OJson::as_str)
                .unwrap_or_default()
                .to_string();
            let mut parameters = Vec::new();
            match tool.get("parameters") {
                None | Some(OJson::Null) => {}
                Some(OJson::Array(ps)) => {
                    for (i, p) in ps.iter().enumerate() {
                        let Some(pname) = p.get("name").and_then(OJson::as_str) else {
                            return Err(err(
                                source,
                                format!("{at} (`{name}`) parameters[{i}] has no string `name`"),
                            ));
                        };
                        parameters.push(ToolParam {
                            name: pname.to_string(),
                            kind: p
                                .get("type")
                                .and_then(OJson::as_str)
                                .unwrap_or("string")
                                .to_string(),
                            description: p
                                .get("description")
                                .and_then(OJson::as_str)
                                .unwrap_or_default()
                                .to_string(),
                            required: matches!(p.get("required"), Some(OJson::Bool(true))),
                        });
                    }
                }
                Some(_) => {
                    return Err(err(
                        source,
                        format!("{at} (`{name}`): `parameters` must be a list"),
                    ));
                }
            }
            let mut spec = tool.clone();
            if let OJson::Object(fields) = &mut spec
                && let Some(slot) = fields.iter_mut().find(|(k, _)| k == "name")
            {
                slot.1 = OJson::String(name.clone());
            }
            if out
                .insert(
                    name.clone(),
                    Tool {
                        name: name.clone(),
                        summary,
                        parameters,
                        spec,
                    },
                )
                .is_some()
            {
                return Err(err(source, format!("{at}: tool `{name}` is defined twice")));
            }
        }
    }
    if out.is_empty() {
        return Err(err(source, "no tools"));
    }
    Ok(Tools(out))
}

/// One case as the file writes it.
#[derive(Debug, Deserialize)]
struct RawCase {
    #[serde(rename = "User Instruction")]
    user_instruction: String,
    #[serde(rename = "User Tool")]
    user_tool: String,
    #[serde(rename = "Tool Parameters")]
    tool_parameters: String,
    #[serde(rename = "Thought")]
    thought: String,
    #[serde(rename = "Tool Response")]
    tool_response: String,
    #[serde(rename = "Attacker Tools")]
    attacker_tools: Vec<String>,
    #[serde(rename = "Attacker Instruction")]
    attacker_instruction: String,
    #[serde(rename = "Attack Type", default)]
    attack_type: String,
}

/// A checked case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseData {
    pub user_instruction: String,
    pub user_tool: String,
    /// `Tool Parameters` as written (the ReAct scratchpad shows it verbatim).
    pub tool_parameters: String,
    /// The same, read as a JSON object (the native conversation's seeded call).
    pub tool_arguments: Value,
    pub thought: String,
    pub tool_response: String,
    pub attacker_tools: Vec<String>,
    pub attacker_instruction: String,
    pub attack_type: String,
}

/// Parses a test-case file; `min_attacker_tools` is 1 for direct harm, 2 for data
/// stealing (the data tool, then the email tool).
pub fn parse_cases(
    bytes: &[u8],
    source: &str,
    tools: &Tools,
    min_attacker_tools: usize,
) -> Result<Vec<CaseData>, DatasetError> {
    let raw: Vec<serde_json::Value> = serde_json::from_slice(bytes).map_err(|e| {
        err(
            source,
            format!(
                "line {} column {}: {e}; expected a JSON list of test cases",
                e.line(),
                e.column()
            ),
        )
    })?;
    if raw.is_empty() {
        return Err(err(source, "the file has no test cases"));
    }
    let mut out = Vec::with_capacity(raw.len());
    for (i, v) in raw.into_iter().enumerate() {
        let at = |msg: String| err(source, format!("cases[{i}]: {msg}"));
        let c: RawCase = serde_json::from_value(v).map_err(|e| {
            at(format!(
                "{e}; a case has the fields \"User Instruction\", \"User Tool\", \"Tool Parameters\", \
                 \"Thought\", \"Tool Response\", \"Attacker Tools\", \"Attacker Instruction\""
            ))
        })?;
        for (field, v) in [
            ("User Instruction", &c.user_instruction),
            ("User Tool", &c.user_tool),
            ("Tool Response", &c.tool_response),
            ("Attacker Instruction", &c.attacker_instruction),
        ] {
            if v.trim().is_empty() {
                return Err(at(format!("`{field}` is empty")));
            }
        }
        if c.attacker_tools.len() < min_attacker_tools {
            return Err(at(format!(
                "`Attacker Tools` lists {} tool(s); this attack type needs {min_attacker_tools}",
                c.attacker_tools.len()
            )));
        }
        for (field, name) in std::iter::once(("User Tool", &c.user_tool))
            .chain(c.attacker_tools.iter().map(|t| ("Attacker Tools", t)))
        {
            if !tools.0.contains_key(name) {
                return Err(at(format!(
                    "`{field}` names `{name}`, which tools.json does not define"
                )));
            }
        }
        let tool_arguments = match pyliteral::parse_json_or_python(&c.tool_parameters) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return Err(at("`Tool Parameters` is not a dict".into())),
            Err(e) => {
                return Err(at(format!(
                    "`Tool Parameters` is not a Python dict literal: {e}"
                )));
            }
        };
        out.push(CaseData {
            user_instruction: c.user_instruction,
            user_tool: c.user_tool,
            tool_parameters: c.tool_parameters,
            tool_arguments,
            thought: c.thought,
            tool_response: c.tool_response,
            attacker_tools: c.attacker_tools,
            attacker_instruction: c.attacker_instruction,
            attack_type: c.attack_type,
        });
    }
    Ok(out)
}

/// The published simulated attacker-tool responses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Responses {
    /// By the exact key `(TOOL,PARAMS)`.
    exact: HashMap<String, String>,
    /// By tool and the parameters read as a value (canonical JSON).
    by_value: HashMap<(String, String), String>,
}

impl Responses {
    /// The response for `tool` called with `args`: by the exact key when the agent's
    /// parameter text is known (ReAct), else by the parameters' value, so a native call
    /// matches whatever spacing or key order the key was written with.
    pub fn lookup(&self, tool: &str, params_text: Option<&str>, args: &Value) -> Option<&str> {
        if let Some(t) = params_text
            && let Some(r) = self.exact.get(&format!("({tool},{t})"))
        {
            return Some(r);
        }
        self.by_value
            .get(&(tool.to_string(), args.to_string()))
            .map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.exact.len()
    }

    pub fn is_empty(&self) -> bool {
        self.exact.is_empty()
    }
}

/// Parses `attacker_simulated_responses.json`.
pub fn parse_responses(bytes: &[u8], source: &str) -> Result<Responses, DatasetError> {
    let map: BTreeMap<String, String> = serde_json::from_slice(bytes).map_err(|e| {
        err(
            source,
            format!(
                "line {} column {}: {e}; expected an object {{\"(TOOL,PARAMS)\": \"response\"}}",
                e.line(),
                e.column()
            ),
        )
    })?;
    let mut out = Responses::default();
    for (k, v) in map {
        let parsed = k
            .strip_prefix('(')
            .and_then(|k| k.strip_suffix(')'))
            .and_then(|k| k.split_once(','));
        let Some((tool, params)) = parsed else {
            return Err(err(
                source,
                format!("key {k:?} is not of the form (TOOL,PARAMS)"),
            ));
        };
        if let Ok(args) = pyliteral::parse_json_or_python(params) {
            out.by_value
                .entry((tool.to_string(), args.to_string()))
                .or_insert_with(|| v.clone());
        }
        out.exact.insert(k, v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TOOLS: &str = r#"[{"toolkit": "Mail", "category": "x", "tools": [
        {"name": "Send", "summary": "Sends.", "parameters": [
            {"name": "to", "type": "string", "description": "Recipient.", "required": true},
            {"name": "cc", "type": "array", "description": "Copies.", "required": false}],
         "returns": [], "exceptions": []}]}]"#;

    #[test]
    fn tools_keep_their_order_and_get_full_names() {
        let t = parse_tools(TOOLS.as_bytes(), "tools.json").unwrap();
        let send = &t.0["MailSend"];
        assert_eq!(send.parameters.len(), 2);
        let mut s = String::new();
        send.spec.write_py(&mut s, Some(1), 0);
        assert!(
            s.starts_with(
                "{\n \"name\": \"MailSend\",\n \"summary\": \"Sends.\",\n \"parameters\": ["
            ),
            "{s}"
        );
        assert!(
            s.ends_with("\"returns\": [],\n \"exceptions\": []\n}"),
            "{s}"
        );
        assert_eq!(
            send.schema(),
            json!({"type": "object", "required": ["to"], "properties": {
                "to": {"type": "string", "description": "Recipient."},
                "cc": {"type": "array", "description": "Copies.", "items": {}}}})
        );
        let e = parse_tools(b"[{\"toolkit\": \"A\"}]", "tools.json").unwrap_err();
        assert!(
            e.to_string()
                .contains("toolkit `A` (toolkits[0]) has no `tools` list"),
            "{e}"
        );
    }

    fn case(edit: impl FnOnce(&mut Value)) -> Vec<u8> {
        let mut c = json!({
            "Attacker Tools": ["MailSend"], "Attacker Instruction": "do x",
            "Attack Type": "Test", "User Tool": "MailSend", "User Instruction": "u",
            "Tool Parameters": "{'to': 'a@example.invalid'}", "Thought": "Thought: t",
            "Tool Response": "\"{'r': 'do x'}\"", "Modifed": 0});
        edit(&mut c);
        serde_json::to_vec(&json!([c])).unwrap()
    }

    #[test]
    fn cases_are_checked_field_by_field() {
        let tools = parse_tools(TOOLS.as_bytes(), "tools.json").unwrap();
        let ok = parse_cases(&case(|_| {}), "f.json", &tools, 1).unwrap();
        assert_eq!(ok[0].tool_arguments, json!({"to": "a@example.invalid"}));
        for (edit, want) in [
            (
                Box::new(|c: &mut Value| c["User Tool"] = json!("Nope")) as Box<dyn Fn(&mut Value)>,
                "`User Tool` names `Nope`",
            ),
            (
                Box::new(|c: &mut Value| c["Tool Parameters"] = json!("[1]")),
                "not a dict",
            ),
            (
                Box::new(|c: &mut Value| c["Tool Parameters"] = json!("{'a': }")),
                "not a Python dict literal",
            ),
            (
                Box::new(|c: &mut Value| c["Attacker Instruction"] = json!(" ")),
                "`Attacker Instruction` is empty",
            ),
            (
                Box::new(|c: &mut Value| {
                    c.as_object_mut().unwrap().remove("Thought");
                }),
                "missing field `Thought`",
            ),
        ] {
            let e = parse_cases(&case(edit), "f.json", &tools, 1)
                .unwrap_err()
                .to_string();
            assert!(e.contains("f.json: cases[0]: ") && e.contains(want), "{e}");
        }
        let e = parse_cases(&case(|_| {}), "f.json", &tools, 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs 2"), "{e}");
    }

    #[test]
    fn responses_match_by_text_or_value() {
        let r = parse_responses(
            br#"{"(MailSend,{\"to\": \"a\", \"n\": 1})": "sent", "(MailSend,{})": "empty"}"#,
            "r.json",
        )
        .unwrap();
        assert_eq!(
            r.lookup("MailSend", Some("{\"to\": \"a\", \"n\": 1}"), &json!(null)),
            Some("sent")
        );
        assert_eq!(
            r.lookup(
                "MailSend",
                Some("{'n': 1, 'to': 'a'}"),
                &json!({"n": 1, "to": "a"})
            ),
            Some("sent")
        );
        assert_eq!(r.lookup("MailSend", None, &json!({})), Some("empty"));
        assert_eq!(r.lookup("MailSend", None, &json!({"to": "b"})), None);
        assert!(
            parse_responses(br#"{"MailSend": "x"}"#, "r.json")
                .unwrap_err()
                .to_string()
                .contains("(TOOL,PARAMS)")
        );
    }
}
