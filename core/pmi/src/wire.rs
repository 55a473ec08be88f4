//! The PMI-1 line codec: one message is one line of space-separated
//! `key=value` tokens, the first of which is `cmd=<command>`.
//!
//! The rules are those of MPICH's "simple" PMI as its hydra launcher
//! (MPICH 4.0) applies them:
//!
//! - a message ends at `\n`; tokens are separated by one or more spaces;
//! - a token splits at its **first** `=`, so a value may contain `=`
//!   (`value=a=b` is the value `a=b`) but never a space or a newline: the
//!   protocol has no quoting, and a backslash is an ordinary character;
//! - a token without `=` is kept as a bare word (newer MPICH clients send
//!   `cmd=abort exitcode=1 message=some text` with the spaces unescaped;
//!   [`rest_of_line`] recovers such a trailing free-text field);
//! - `key=` is a field with an empty value;
//! - `mcmd=spawn` starts a multi-line spawn request (one `key=value` per
//!   line, ended by the line `endcmd`); oxmpi does not spawn, and
//!   [`parse_line`] rejects it with [`WireError::Multiline`].

use std::fmt::Write as _;

/// The longest message (line or `mcmd` block) a peer may send, in bytes,
/// newline included: 64 KiB. Real messages are far shorter (a `put` with
/// the largest advertised key and value is under 1.4 KiB); the limit only
/// bounds the memory a misbehaving peer can make the other side buffer.
pub const MAX_MESSAGE_LEN: usize = 64 * 1024;

/// How many bytes of an offending message an error quotes: 80, as
/// `oxmpi_plugin_api::text::excerpt` quotes 80 characters (this crate
/// stays free of the plugin ABI, so it has its own copy for bytes).
pub const EXCERPT_LEN: usize = 80;

/// One PMI-1 message: the command (the value of the leading `cmd=`) and the
/// other tokens in the order they appeared.
///
/// A field is `(key, Some(value))` for `key=value` (the value may be empty)
/// and `(word, None)` for a bare word without `=`. Duplicate keys are kept;
/// [`Message::get`] returns the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The command name, e.g. `init`, `put`, `get_result`.
    pub command: String,
    /// The remaining tokens, in order.
    pub fields: Vec<(String, Option<String>)>,
}

/// Why a message could not be parsed or encoded. Every variant quotes the
/// offending text as an excerpt: at most [`EXCERPT_LEN`] bytes of it,
/// lossily decoded as UTF-8, then `…(N bytes)` when it was longer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The line holds no token at all (empty, or only spaces).
    #[error("empty PMI message")]
    Empty,
    /// The line is not valid UTF-8.
    #[error("PMI message is not UTF-8 text: {text:?}")]
    NotUtf8 {
        /// The line, lossily decoded.
        text: String,
    },
    /// A line passed to [`parse_line`] contains a newline before its end.
    #[error("PMI message contains a newline before its end: {text:?}")]
    EmbeddedNewline {
        /// The offending text.
        text: String,
    },
    /// The line does not start with `cmd=`.
    #[error("PMI message does not start with `cmd=`: {text:?}")]
    MissingCmd {
        /// The offending text.
        text: String,
    },
    /// The line starts with `cmd=` followed by nothing.
    #[error("PMI message has an empty command name: {text:?}")]
    EmptyCommand {
        /// The offending text.
        text: String,
    },
    /// A token starts with `=` (a value without a key).
    #[error("PMI message has a value without a key ({token:?}) in {text:?}")]
    EmptyKey {
        /// The token that starts with `=`.
        token: String,
        /// The whole message.
        text: String,
    },
    /// A multi-line `mcmd=` message (MPI_Comm_spawn), which oxmpi does not
    /// support.
    #[error("multi-line PMI message `mcmd=...` (process spawning, MPI_Comm_spawn) is not supported: {text:?}")]
    Multiline {
        /// The offending text.
        text: String,
    },
    /// The message is longer than [`MAX_MESSAGE_LEN`].
    #[error("PMI message of {len} bytes is longer than the limit of {max} bytes: {text:?}")]
    TooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
        /// Its beginning.
        text: String,
    },
    /// [`Message::encode`] was given a command, key or value the protocol
    /// cannot carry.
    #[error("cannot encode PMI {what} {text:?}: {reason}")]
    Unencodable {
        /// `command`, `key` or `value`.
        what: &'static str,
        /// The offending text.
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// Quotes at most [`EXCERPT_LEN`] bytes of `bytes`, lossily decoded, then
/// `…(N bytes)` with the whole length when it cut. Messages print it with
/// `{:?}`, which escapes control characters.
pub fn excerpt(bytes: &[u8]) -> String {
    if bytes.len() <= EXCERPT_LEN {
        String::from_utf8_lossy(bytes).into_owned()
    } else {
        let mut s = String::from_utf8_lossy(&bytes[..EXCERPT_LEN]).into_owned();
        s.push_str(&format!("…({} bytes)", bytes.len()));
        s
    }
}

impl Message {
    /// A message with `command` and no fields.
    pub fn new(command: impl Into<String>) -> Self {
        Message {
            command: command.into(),
            fields: Vec::new(),
        }
    }

    /// Appends the field `key=value` and returns the message (builder style).
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.fields.push((key.into(), Some(value.into())));
        self
    }

    /// The value of the first `key=value` field with this key, or `None`
    /// when there is none (a bare word `key` does not count).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, v)| k == key && v.is_some())
            .and_then(|(_, v)| v.as_deref())
    }

    /// Parses one line; see [`parse_line`].
    pub fn parse(line: &[u8]) -> Result<Message, WireError> {
        parse_line(line)
    }

    /// Appends the encoded line, `\n` included, to `out`.
    ///
    /// Errors ([`WireError::Unencodable`], `out` unchanged): an empty
    /// command or key; a command, key or value containing a space, `\n` or
    /// `\r`; a key containing `=`. Anything else, `=` inside values
    /// included, is encoded verbatim, so `parse_line(encode(m)) == m`.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        check_token("command", &self.command, false)?;
        for (key, value) in &self.fields {
            check_token("key", key, true)?;
            if let Some(v) = value {
                check_value(v)?;
            }
        }
        out.extend_from_slice(b"cmd=");
        out.extend_from_slice(self.command.as_bytes());
        for (key, value) in &self.fields {
            out.push(b' ');
            out.extend_from_slice(key.as_bytes());
            if let Some(v) = value {
                out.push(b'=');
                out.extend_from_slice(v.as_bytes());
            }
        }
        out.push(b'\n');
        Ok(())
    }

    /// The encoded line, `\n` included; errors as [`Message::encode_into`].
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let mut out = Vec::with_capacity(self.encoded_len_hint());
        self.encode_into(&mut out)?;
        Ok(out)
    }

    fn encoded_len_hint(&self) -> usize {
        5 + self.command.len()
            + self
                .fields
                .iter()
                .map(|(k, v)| 2 + k.len() + v.as_ref().map_or(0, |v| v.len()))
                .sum::<usize>()
    }
}

impl std::fmt::Display for Message {
    /// The message as it would appear on the wire, without the newline.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cmd={}", self.command)?;
        for (key, value) in &self.fields {
            f.write_char(' ')?;
            f.write_str(key)?;
            if let Some(v) = value {
                write!(f, "={v}")?;
            }
        }
        Ok(())
    }
}

fn check_token(what: &'static str, s: &str, is_key: bool) -> Result<(), WireError> {
    let reason = if s.is_empty() {
        Some("it is empty")
    } else if s.contains(' ') {
        Some("it contains a space, which the PMI-1 protocol cannot carry")
    } else if s.contains(['\n', '\r']) {
        Some("it contains a line break")
    } else if is_key && s.contains('=') {
        Some("a key cannot contain `=`")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(WireError::Unencodable {
            what,
            text: excerpt(s.as_bytes()),
            reason,
        }),
        None => Ok(()),
    }
}

fn check_value(s: &str) -> Result<(), WireError> {
    let reason = if s.contains(' ') {
        Some("it contains a space, which the PMI-1 protocol cannot carry")
    } else if s.contains(['\n', '\r']) {
        Some("it contains a line break")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(WireError::Unencodable {
            what: "value",
            text: excerpt(s.as_bytes()),
            reason,
        }),
        None => Ok(()),
    }
}

/// Parses one PMI-1 line.
///
/// `line` may end with `\n` (and a `\r` before it, which is dropped); it
/// must not contain another newline. Runs of spaces separate tokens;
/// leading and trailing spaces are ignored.
///
/// Errors: [`WireError::Empty`] for a blank line, [`WireError::TooLong`]
/// above [`MAX_MESSAGE_LEN`], [`WireError::NotUtf8`],
/// [`WireError::Multiline`] for `mcmd=` (and for any `mcmd=` block),
/// [`WireError::EmbeddedNewline`], [`WireError::MissingCmd`] when the
/// first token is not `cmd=...`, [`WireError::EmptyCommand`] and
/// [`WireError::EmptyKey`] for a token starting with `=`.
pub fn parse_line(line: &[u8]) -> Result<Message, WireError> {
    if line.len() > MAX_MESSAGE_LEN {
        return Err(WireError::TooLong {
            len: line.len(),
            max: MAX_MESSAGE_LEN,
            text: excerpt(line),
        });
    }
    let mut body = line.strip_suffix(b"\n").unwrap_or(line);
    body = body.strip_suffix(b"\r").unwrap_or(body);
    let text = std::str::from_utf8(body).map_err(|_| WireError::NotUtf8 {
        text: excerpt(line),
    })?;
    let trimmed = text.trim_start_matches(' ');
    if trimmed.starts_with("mcmd=") {
        return Err(WireError::Multiline {
            text: excerpt(line),
        });
    }
    if text.contains('\n') {
        return Err(WireError::EmbeddedNewline {
            text: excerpt(line),
        });
    }
    let mut tokens = text.split(' ').filter(|t| !t.is_empty());
    let first = tokens.next().ok_or(WireError::Empty)?;
    let command = first
        .strip_prefix("cmd=")
        .ok_or_else(|| WireError::MissingCmd {
            text: excerpt(line),
        })?;
    if command.is_empty() {
        return Err(WireError::EmptyCommand {
            text: excerpt(line),
        });
    }
    let mut fields = Vec::new();
    for token in tokens {
        match token.split_once('=') {
            Some(("", _)) => {
                return Err(WireError::EmptyKey {
                    token: excerpt(token.as_bytes()),
                    text: excerpt(line),
                })
            }
            Some((k, v)) => fields.push((k.to_owned(), Some(v.to_owned()))),
            None => fields.push((token.to_owned(), None)),
        }
    }
    Ok(Message {
        command: command.to_owned(),
        fields,
    })
}

/// The text from the token `key=` to the end of `line`, spaces included
/// (trailing spaces, `\r` and `\n` removed); `None` when no token starts
/// with `key=`.
///
/// Newer MPICH clients send `cmd=abort exitcode=N message=<free text>`
/// without escaping the spaces of the text; this recovers the whole text.
/// Only a token boundary counts: `xmessage=` does not match `message`.
pub fn rest_of_line<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let mut at = 0;
    while at < line.len() {
        let rest = &line[at..];
        let boundary = at == 0 || line.as_bytes()[at - 1] == b' ';
        if boundary && rest.starts_with(key) && rest.as_bytes().get(key.len()) == Some(&b'=') {
            let value = &rest[key.len() + 1..];
            return Some(value.trim_end_matches([' ', '\r', '\n']));
        }
        match rest.find(' ') {
            Some(i) => at += i + 1,
            None => break,
        }
    }
    None
}

/// Builds a response line `cmd=<command> k1=v1 k2=v2\n` in one allocation.
///
/// For the server's own replies, whose tokens are known to be encodable
/// (they come from parsed messages, from [`crate::JobInfo`] after
/// sanitizing, or are fixed strings); nothing is checked here.
pub(crate) fn response(command: &str, fields: &[(&str, &str)]) -> Vec<u8> {
    let len = 5
        + command.len()
        + fields
            .iter()
            .map(|(k, v)| 2 + k.len() + v.len())
            .sum::<usize>();
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(b"cmd=");
    out.extend_from_slice(command.as_bytes());
    for (k, v) in fields {
        out.push(b' ');
        out.extend_from_slice(k.as_bytes());
        out.push(b'=');
        out.extend_from_slice(v.as_bytes());
    }
    out.push(b'\n');
    out
}

/// Turns free text into one protocol token for a `msg=` field: spaces
/// become `_` (as hydra writes `key_X_not_found`), line breaks are dropped.
pub(crate) fn msg_token(text: &str) -> String {
    text.chars()
        .filter(|c| *c != '\n' && *c != '\r')
        .map(|c| if c == ' ' { '_' } else { c })
        .collect()
}

#[cfg(test)]
mod tests;
