//! The scan rules, one file each, over one definition at a time ([`Ctx`]).
//!
//! The text rules read every string of a definition ([`crate::fields`]) in a normal form:
//! lowercased, typographic quotes made plain, runs of spaces and tabs collapsed (newlines
//! kept). Patterns are ASCII byte regexes over that form; a hit is mapped back to the
//! original text, so a finding quotes what the server sent, not the normal form.
//!
//! Rules look at one *sentence* at a time where the meaning depends on what is asked
//! together: "read ~/.ssh/id_rsa" is a request for a credential file, "Reads the ssh
//! config" a description of what a tool does (third person, no imperative).

pub mod encoded_payload;
pub mod excessive_capability;
pub mod exfiltration_channel;
pub mod hidden_instruction;
pub mod invisible_text;
pub mod name_collision;
pub mod sensitive_data_request;
pub mod tool_shadowing;

// What every rule shares, and the list of them with the run over one definition.
mod check;
pub(crate) mod context;
mod mandate;
mod steering;
#[cfg(test)]
pub(crate) mod testing;

pub use check::{RULES, check_item};
pub use context::{
    CONVERSATION_DATA, CREDENTIAL_FILE, Ctx, Norm, NormField, REQUEST_VERB, SECRET_NOUN,
    is_invisible, quote, re, sentence_where, sentence_with,
};
