//! The model-call seam: how an attack, a judge or the agent exam's cascade reaches a
//! model. The call layer's [`crate::cache::CachedModel`] implements it, adding the
//! response cache, the journal, the query budget and call accounting around the real
//! model; attacks and judges see only this trait.

use gauntlet_core::hash::HashWriter;
use gauntlet_core::message::{ChatRequest, ChatResponse, Message};
use gauntlet_models::{BoxFuture, ModelError, ToolProtocol};

/// A model as an attack or judge sees it: the engine's wrapper that adds the response
/// cache, the journal, the query budget and call accounting around the real model.
pub trait CallModel: Send + Sync {
    fn call<'a>(&'a self, req: ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ModelError>>;
    /// [`CallModel::call`] with a borrowed request, for callers that keep their request
    /// (an agent loop growing one conversation). The default clones the request; wrappers
    /// that only read it (the engine's cache) override it, so no copy is made.
    fn call_ref<'a>(
        &'a self,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        self.call(req.clone())
    }
    /// Calls the model with the conversation's request as it stands. The default is
    /// [`CallModel::call_ref`]; the engine's cache overrides it to key the request
    /// incrementally, keeping its hash state of the messages already sent in the
    /// conversation ([`Conversation::memo`]), so a growing conversation is not re-hashed
    /// from its start on every call.
    fn call_conversation<'a>(
        &'a self,
        conv: &'a mut Conversation,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        self.call_ref(&conv.req)
    }
    /// The tool protocol of the model behind this seam (`tool_protocol` of the target):
    /// agent surfaces use it to record unparsed tool calls
    /// ([`ToolProtocol::unparsed`]) and to show transcripts as sent
    /// ([`ToolProtocol::as_sent`]).
    fn tool_protocol(&self) -> ToolProtocol {
        ToolProtocol::Native
    }
}

/// A request whose conversation only ever grows by appending messages (an agent loop):
/// everything else about the request is fixed when it is made. Because its history can
/// never change, a wrapper may keep state computed over the messages sent so far (the
/// cache's hash state) in [`Conversation::memo`] and reuse it on the next call.
///
/// It also keeps its size ([`ChatRequest::size`]) as it grows, so the call layer caps a
/// conversation (the target's `max_request_bytes`, 16 MiB by default) without measuring
/// it again on every call: one that grew past the cap ends with that call's error.
pub struct Conversation {
    req: ChatRequest,
    memo: Option<PrefixMemo>,
    size: usize,
}

/// State a wrapper keeps in a [`Conversation`] between calls.
pub struct PrefixMemo {
    /// Which wrapper computed it (an id unique to the wrapper): another must not reuse it.
    pub owner: u64,
    /// How many of the conversation's first messages `state` covers.
    pub messages: usize,
    /// The hash state over the request's fixed part and those messages.
    pub state: HashWriter,
}

impl Conversation {
    pub fn new(req: ChatRequest) -> Self {
        let size = req.size();
        Conversation {
            req,
            memo: None,
            size,
        }
    }
    /// The request's size ([`ChatRequest::size`]), kept as messages are pushed.
    pub fn size(&self) -> usize {
        self.size
    }
    /// The request as it stands.
    pub fn request(&self) -> &ChatRequest {
        &self.req
    }
    pub fn messages(&self) -> &[Message] {
        &self.req.messages
    }
    /// Appends a message (the only change a conversation allows).
    pub fn push(&mut self, m: Message) {
        self.size += m.size();
        self.req.messages.push(m);
    }
    /// The request and the wrapper's memo, together.
    pub fn memo(&mut self) -> (&ChatRequest, &mut Option<PrefixMemo>) {
        (&self.req, &mut self.memo)
    }
    pub fn into_request(self) -> ChatRequest {
        self.req
    }
}
