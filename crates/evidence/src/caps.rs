//! The caps every evidence server applies, with their defaults (the `evidence` param's
//! keys of the same names override them).

/// Caps on what the receiver, the sink and the content server accept and keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Largest request body accepted, in bytes (OTLP export, sink hit); larger is 413.
    pub max_body_bytes: usize,
    /// Most messages (spans, attributes, values) one OTLP request may hold, and most
    /// objects and arrays in a JSON one; more is refused (400) before decoding.
    pub max_elements: usize,
    /// Deepest nesting of an OTLP request; deeper is refused (400) before decoding.
    pub max_depth: usize,
    /// Most spans kept per trace; later ones are counted as dropped.
    pub max_spans: usize,
    /// Most bytes of evidence text kept per trace; spans past it are counted as dropped.
    pub max_trace_bytes: usize,
    /// Longest attribute value kept, in bytes; a longer one is cut and marked.
    pub max_attribute_bytes: usize,
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            max_body_bytes: 4 << 20,
            max_elements: 200_000,
            max_depth: 32,
            max_spans: 1024,
            max_trace_bytes: 1 << 20,
            max_attribute_bytes: 8 << 10,
        }
    }
}
