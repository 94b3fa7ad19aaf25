//! What every rule reads: one definition under scan ([`Ctx`]), its strings in the normal
//! form with the map back to the original ([`Norm`]), sentence and quoting helpers, and
//! the patterns several rules share.

use crate::fields::{Field, ItemKind, Slot};
use regex::bytes::{Regex, RegexBuilder};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

/// One definition under scan, with what the rules need to know about its neighbours. A
/// rule reports on it with [`Ctx::finding`] (defined beside [`crate::finding::Finding`]).
pub struct Ctx<'a> {
    pub server: &'a str,
    pub kind: ItemKind,
    pub item: &'a Value,
    pub name: &'a str,
    pub fields: Vec<NormField<'a>>,
    /// Tool names on the same server (this one included).
    pub own_tools: &'a BTreeSet<String>,
    /// Tool names on every *other* scanned server, with the servers that have them.
    pub other_tools: &'a BTreeMap<String, BTreeSet<String>>,
    /// The item's parameter names (tools only).
    pub param_names: Vec<String>,
}

impl<'a> Ctx<'a> {
    /// The fields a text rule reads: prose and values (names are the name rules').
    pub fn text_fields(&self) -> impl Iterator<Item = &NormField<'a>> {
        self.fields.iter().filter(|f| f.field.slot != Slot::Name)
    }
}

/// A field with its normal form.
pub struct NormField<'a> {
    pub field: &'a Field,
    pub norm: Norm,
}

/// Normal form of a text (see the module docs) with a map back to the original.
pub struct Norm {
    pub text: String,
    /// `map[i]`: byte offset in the original of the character that produced normal byte
    /// `i`; one extra entry for the end.
    map: Vec<usize>,
}

impl Norm {
    pub fn new(s: &str) -> Norm {
        let mut text = String::with_capacity(s.len());
        let mut map = Vec::with_capacity(s.len() + 1);
        let mut last_space = false;
        for (i, c) in s.char_indices() {
            let c = match c {
                '\u{2018}' | '\u{2019}' | '\u{201b}' | '\u{2032}' | '`' => '\'',
                '\u{201c}' | '\u{201d}' | '\u{201f}' | '\u{2033}' => '"',
                '\t' | '\u{a0}' => ' ',
                c => c,
            };
            if c == ' ' {
                if last_space {
                    continue;
                }
                last_space = true;
            } else {
                last_space = false;
            }
            let before = text.len();
            for l in c.to_lowercase() {
                text.push(l);
            }
            map.extend(std::iter::repeat_n(i, text.len() - before));
        }
        map.push(s.len());
        Norm { text, map }
    }

    /// The original byte range of a normal range.
    pub fn original(&self, r: Range<usize>) -> Range<usize> {
        let start = self.map[r.start.min(self.map.len() - 1)];
        let end = if r.end == 0 {
            0
        } else {
            // The end of the character that produced the last byte.
            let last = self.map[(r.end - 1).min(self.map.len() - 1)];
            self.map[r.end.min(self.map.len() - 1)].max(last + 1)
        };
        start..end
    }

    /// The sentences of the normal form (split at `.`, `!`, `?`, `;` followed by a space
    /// or the end, and at newlines), as byte ranges.
    pub fn sentences(&self) -> Vec<Range<usize>> {
        let b = self.text.as_bytes();
        let mut out = Vec::new();
        let mut start = 0;
        for i in 0..b.len() {
            let end_here = match b[i] {
                b'\n' => true,
                b'.' | b'!' | b'?' | b';' => {
                    i + 1 == b.len() || b[i + 1] == b' ' || b[i + 1] == b'\n'
                }
                _ => false,
            };
            if end_here {
                if b[start..i + 1].iter().any(|c| !c.is_ascii_whitespace()) {
                    out.push(start..i + 1);
                }
                start = i + 1;
            }
        }
        if b[start..].iter().any(|c| !c.is_ascii_whitespace()) {
            out.push(start..b.len());
        }
        out
    }
}

/// Compiles an ASCII byte regex over the normal form (see the module docs).
pub fn re(pattern: &str) -> Regex {
    RegexBuilder::new(pattern)
        .unicode(false)
        .build()
        .unwrap_or_else(|e| panic!("bad rule pattern {pattern}: {e}"))
}

/// The original text of a sentence range of a field, for quoting.
pub fn quote(f: &NormField<'_>, r: Range<usize>) -> String {
    let o = f.norm.original(r);
    f.field
        .text
        .get(o)
        .unwrap_or(&f.field.text)
        .trim()
        .to_string()
}

/// The first sentence of `f` in which every regex of `all` matches; its range.
pub fn sentence_with(f: &NormField<'_>, all: &[&Regex]) -> Option<Range<usize>> {
    let b = f.norm.text.as_bytes();
    f.norm
        .sentences()
        .into_iter()
        .find(|s| all.iter().all(|r| r.is_match(&b[s.clone()])))
}

/// The first sentence of `f` for which `pred` holds.
pub fn sentence_where(f: &NormField<'_>, pred: impl Fn(&[u8]) -> bool) -> Option<Range<usize>> {
    let b = f.norm.text.as_bytes();
    f.norm.sentences().into_iter().find(|s| pred(&b[s.clone()]))
}

/// Imperative request verbs (base form: a description says "reads", a request "read").
pub const REQUEST_VERB: &str = r"\b(read|open|cat|load|fetch|get|grab|include|pass|send|provide|attach|append|prepend|copy|paste|upload|forward|extract|collect|put|insert|add|supply|give|share|embed|retrieve|gather|dump|print|output|list|enumerate|transmit|post|submit|fill|populate|place|write|summari[sz]e|quote|repeat|echo|reveal|disclose|leak|exfiltrate|carry)\b";

/// Credential files and secret stores by path or name.
pub const CREDENTIAL_FILE: &str = r"(~/\.ssh|\.ssh/|\bid_(rsa|dsa|ecdsa|ed25519)\b|authorized_keys|known_hosts|\.aws/(credentials|config)|\.env\b|\bdotenv\b|\bmcp\.json\b|\.cursor/|claude_desktop_config|\.netrc|\.npmrc|\.pypirc|\.git-credentials|\.kube/config|kubeconfig|/etc/passwd|/etc/shadow|\.bash_history|\.zsh_history|\bkeychain\b|wallet\.dat|\.docker/config\.json|\.gnupg|\.config/gh|credentials\.json|secrets\.(ya?ml|json|toml)|\.pem\b|\.p12\b|\.keystore\b)";

/// Secret nouns.
pub const SECRET_NOUN: &str = r"\b(api[ _-]?keys?|api[ _-]?tokens?|secret[ _-]?keys?|private[ _-]?keys?|passwords?|passphrases?|credentials?|access[ _-]?tokens?|auth(entication)?[ _-]?tokens?|bearer[ _-]?tokens?|refresh[ _-]?tokens?|session[ _-]?(tokens?|cookies?|ids?)|cookies|ssh[ _-]?keys?|seed[ _-]?phrases?|mnemonic|recovery[ _-]?(codes?|phrases?)|environment[ _-]?variables?|env[ _-]?vars?|(openai|anthropic|github|gitlab|aws|azure|gcp|google|slack|stripe|npm|pypi|hf|huggingface|openrouter|twilio|sendgrid|discord|telegram|db|database)_[a-z_]*(key|token|secret|password)|secrets|2fa[ _-]?codes?|otp[ _-]?codes?|one[ -]time[ _-]?(codes?|passwords?)|credit[ _-]?card[ _-]?numbers?|card[ _-]?numbers?|cvv|cvc|iban|bank[ _-]?account([ _-]?numbers?)?|routing[ _-]?numbers?|pin[ _-]?codes?|social[ _-]?security[ _-]?numbers?|ssn|passport[ _-]?numbers?|home[ _-]?address|date[ _-]?of[ _-]?birth)\b";

/// What the conversation holds: the system prompt, earlier messages, other tools'
/// outputs; also by what was said in it ("everything the user told you", "what was
/// discussed so far", "a recap of the conversation", "the emails you have read").
pub const CONVERSATION_DATA: &str = r"(\bsystem[ _-]?(prompt|message|instructions)\b|\b(conversation|chat|message|dialog(ue)?)[ _-]?(history|log|transcript|so far)\b|\b(previous|prior|earlier|preceding|past|all)[ _-](user[ _-](messages?|turns?|prompts?)|messages|turns|prompts|conversation|chats|exchanges|tool[ _-]?(calls|results|outputs))\b|\b(full|entire|whole|complete)[ _-](context|conversation|history|prompt|transcript|chat)\b|\bcontext[ _-]?window\b|\beverything (the user|you know|you have|in (the|this|your) (context|conversation))\b|\b(outputs?|results?|responses?|return values?) (of|from) (all |any |the |every )?(other|previous|prior|earlier|another) tools?\b|\bother tools?'? (outputs?|results?|responses?)\b|\byour (instructions|rules|guidelines|configuration)\b|\bthe user'?s (messages|conversation|chat|history|emails?|contacts|files|documents|data)\b|\b(the )?user'?s (previous|prior|earlier|past|other|full|entire|whole|complete|exact|original) (questions?|messages?|requests?|prompts?|inputs?|queries)\b|\b(previous|prior|earlier|past) (questions|requests|queries|inputs|answers)\b|\b(last|recent|latest|previous) ([0-9]+ |few |several |all )?(messages|turns|exchanges|replies|requests|questions|prompts|inputs|queries)\b|\bmessages (of|from|in) (the|this|our) (conversation|chat|session)\b|\b(everything|anything|all) (that )?(the user|you|they|we) (has |have |had )?(said|told|asked|wrote|written|typed|discussed|mentioned|shared|requested|talked about)\b|\bwhat (the user|they) (has |have |had )?(said|told you|asked|wrote|typed|discussed|mentioned|shared|requested)( to you)? (so far|earlier|before|previously|up to now|until now|in (this|the) (conversation|chat|session))\b|\b(discussed|said|mentioned|talked about|typed) (so far|earlier|before|previously|above|up to now|until now|with the user|in (this|the) (conversation|chat|session))\b|\b(so far|up to now|until now|to date) in (the|this|our) (conversation|chat|session|discussion)\b|\b(recap|summary|transcript|record|log|copy|account|digest|rundown) of (everything|all|what|the (conversation|chat|discussion|session|exchange))\b|\b(user'?s|their|your) (last|recent|earlier|previous|prior|past|latest|first) ([0-9]+ |few |several |two |three |four |five |ten )?(messages?|requests?|questions?|prompts?|turns?|inputs?|queries|query|instructions|replies|reply)\b|\b(chat|conversation|discussion|dialog(ue)?|exchange) (above|before this|so far|until now|up to now|that (came|come|happened) before|preceding|earlier in)\b|\b(you|the assistant|the model|the agent) (have |has )?(read|seen|received|opened|processed) (any |the |all |every )?(emails?|messages?|documents?|mails?)\b|\b(every|each|all( of)? the|all|any) (messages?|questions?|requests?|prompts?|things?)( that)? (the user|you|they) (has |have |had )?(sent|said|typed|written|asked|wrote|shared|entered|given)\b|\bhistorial (completo )?de (la )?conversaci(ó|o)n\b|\btoda la conversaci(ó|o)n\b|\bhist(ó|o)rico (completo )?da conversa\b|\btoda a conversa\b|\bcronologia (completa )?della (conversazione|chat)\b|\btutta la conversazione\b|\b(gespr(ä|a)chs|chat)verlauf\b|\b(gesamte|ganze)n? (gespr(ä|a)ch|unterhaltung|konversation)\b|\bhistorique (de la |du )?(conversation|chat|discussion)\b|\btoute la conversation\b|\btout ce que l'utilisateur a (dit|(é|e)crit|demand(é|e))\b|\btodo lo que el usuario (ha )?(dicho|escrito|pedido)\b|\btudo (o )?que o usu(á|a)rio (disse|escreveu|pediu)\b|\btutto (ci(ò|o) )?che l'utente ha (detto|scritto|chiesto)\b|\balles,? was der (benutzer|nutzer) (gesagt|geschrieben|gefragt)\b|\bgespreksgeschiedenis\b|\bhet (hele|volledige) gesprek\b|\b(prompt (del|de) sistema|prompt syst(è|e)me|systemprompt|systeemprompt)\b|историю (переписки|диалога|разговора|чата)|всю переписку|предыдущие сообщения|системн(ый|ые) (промпт|инструкции)|对话历史|聊天记录|之前的(对话|消息)|完整(的)?对话|系统提示|会話履歴|これまでの会話|チャット履歴|システムプロンプト|이전 대화|대화 (내용|기록)|채팅 기록|시스템 프롬프트|l(ị|i)ch s(ử|u) (cu(ộ|o)c )?(tr(ò|o) chuy(ệ|e)n|h(ộ|o)i tho(ạ|a)i)|l(ờ|o)i nh(ắ|a)c h(ệ|e) th(ố|o)ng|histori(a|ę|e|i) (rozmowy|czatu|konwersacji)|prompt systemowy|sohbet ge(ç|c)mi(ş|s)i|sistem istemi|riwayat (percakapan|obrolan)|prompt sistem|سجل (المحادثة|الدردشة)|موجه النظام|बातचीत का (इतिहास|पूरा)|सिस्टम प्रॉम्प्ट|істор(ію|ія) (розмови|чату|листування)|системн(ий|і) (промпт|інструкції)|останн(є|і) повідомлен|последнее сообщение)";

/// Is `c` a character a renderer may not show (see `invisible_text`)?
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{180e}'
        | '\u{034f}' | '\u{115f}' | '\u{1160}' | '\u{3164}' | '\u{ffa0}' | '\u{00ad}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{061c}'
        | '\u{e0000}'..='\u{e007f}' | '\u{e0100}'..='\u{e01ef}')
        || (c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_normal_form_maps_back_to_the_original() {
        let s = "Do NOT  tell the User\u{2019}s   boss.\nNext";
        let n = Norm::new(s);
        assert_eq!(n.text, "do not tell the user's boss.\nnext");
        let at = n.text.find("user's").unwrap();
        let o = n.original(at..at + "user's".len());
        assert_eq!(&s[o], "User\u{2019}s");
        assert_eq!(n.sentences().len(), 2);
        // Characters whose lowercase is longer map to themselves.
        let n = Norm::new("İx");
        assert_eq!(&"İx"[n.original(0..n.text.len())], "İx");
    }
}
