//! The wire format of everything the core exchanges as bytes: schedules,
//! coefficients, specs and graphs.
//!
//! ```text
//! byte 0      format version (WIRE_VERSION)
//! byte 1      message kind   (Kind as u8)
//! bytes 2..   the value in postcard (varint integers, f32 little-endian,
//!             sequences length-prefixed), nothing after it
//! ```
//!
//! [`to_slice`] writes into a caller's buffer and returns the used part;
//! [`from_bytes`] reads one message and rejects a wrong version, a wrong
//! kind, malformed or truncated bodies and trailing bytes, each with its own
//! [`WireError`]. A message's largest size is known at compile time
//! ([`Message::MAX_ENCODED_LEN`]), so a fixed buffer always suffices.

use crate::cost::Coefficients;
use crate::graph::Graph;
use crate::schedule::Schedule;
use crate::spec::HardwareSpec;
use core::fmt;
use postcard::experimental::max_size::MaxSize;
use serde::{de::DeserializeOwned, Serialize};

/// Version of the wire format.
pub const WIRE_VERSION: u8 = 1;

/// Bytes before the postcard body.
pub const HEADER_LEN: usize = 2;

/// What a message holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Kind {
    /// A [`Schedule`].
    Schedule = 1,
    /// [`Coefficients`].
    Coefficients = 2,
    /// A [`HardwareSpec`].
    Spec = 3,
    /// A [`Graph`].
    Graph = 4,
}

/// A type with a wire encoding.
pub trait Message: Serialize + DeserializeOwned + MaxSize {
    /// The kind byte of this type.
    const KIND: Kind;
    /// Most bytes an encoding of this type takes, header included.
    const MAX_ENCODED_LEN: usize = HEADER_LEN + Self::POSTCARD_MAX_SIZE;
}

impl<const L: usize> Message for Schedule<L> {
    const KIND: Kind = Kind::Schedule;
}
impl Message for Coefficients {
    const KIND: Kind = Kind::Coefficients;
}
impl Message for HardwareSpec {
    const KIND: Kind = Kind::Spec;
}
impl<const L: usize> Message for Graph<L> {
    const KIND: Kind = Kind::Graph;
}

/// Why bytes could not be encoded or decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WireError {
    /// The output buffer is too small.
    BufferTooSmall,
    /// The input is shorter than the header.
    Truncated,
    /// The version byte is not [`WIRE_VERSION`].
    UnsupportedVersion {
        /// The version found.
        found: u8,
    },
    /// The kind byte is not the expected type's.
    WrongKind {
        /// The kind byte found.
        found: u8,
    },
    /// The body ended early.
    UnexpectedEnd,
    /// The body is not a valid encoding of the type.
    Malformed,
    /// Bytes follow the message.
    TrailingBytes,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::BufferTooSmall => f.write_str("output buffer too small"),
            WireError::Truncated => f.write_str("truncated: shorter than the 2-byte header"),
            WireError::UnsupportedVersion { found } => {
                write!(f, "unsupported format version {found} (this build reads version {WIRE_VERSION})")
            }
            WireError::WrongKind { found } => write!(f, "wrong message kind {found}"),
            WireError::UnexpectedEnd => f.write_str("truncated: the message ends early"),
            WireError::Malformed => f.write_str("malformed message body"),
            WireError::TrailingBytes => f.write_str("trailing bytes after the message"),
        }
    }
}

/// Encodes `value` into `buf`; returns the written prefix of `buf`.
pub fn to_slice<'b, T: Message>(value: &T, buf: &'b mut [u8]) -> Result<&'b mut [u8], WireError> {
    if buf.len() < HEADER_LEN {
        return Err(WireError::BufferTooSmall);
    }
    let (head, body) = buf.split_at_mut(HEADER_LEN);
    if let [v, k] = head {
        *v = WIRE_VERSION;
        *k = T::KIND as u8;
    }
    let used = postcard::to_slice(value, body).map_err(|_| WireError::BufferTooSmall)?.len();
    buf.get_mut(..HEADER_LEN + used).ok_or(WireError::BufferTooSmall)
}

/// Decodes one `T` occupying all of `bytes`.
pub fn from_bytes<T: Message>(bytes: &[u8]) -> Result<T, WireError> {
    let [version, kind, body @ ..] = bytes else {
        return Err(WireError::Truncated);
    };
    if *version != WIRE_VERSION {
        return Err(WireError::UnsupportedVersion { found: *version });
    }
    if *kind != T::KIND as u8 {
        return Err(WireError::WrongKind { found: *kind });
    }
    let (value, rest) = postcard::take_from_bytes::<T>(body).map_err(|e| match e {
        postcard::Error::DeserializeUnexpectedEnd => WireError::UnexpectedEnd,
        _ => WireError::Malformed,
    })?;
    if !rest.is_empty() {
        return Err(WireError::TrailingBytes);
    }
    Ok(value)
}
