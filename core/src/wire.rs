//! The wire format of everything the core exchanges as bytes: schedules,
//! coefficients, specs and graphs.
//!
//! A message is a header, then the value in postcard (varint integers, f32
//! little-endian, sequences length-prefixed), nothing after it:
//!
//! | byte | holds | in |
//! | --- | --- | --- |
//! | 0 | format version ([`WIRE_VERSION`]) | every message |
//! | 1 | message kind ([`Kind`] as `u8`) | every message |
//! | 2 | the cost model's version ([`COEFFICIENTS_VERSION`]) | [`Coefficients`] only |
//! | then | the postcard body | every message |
//!
//! Coefficients mean something only under the cost model they were fitted
//! for, so their header names it ([`Message::COST_MODEL_VERSION`]): a
//! schedule, a spec or a graph has a 2-byte header, coefficients a 3-byte
//! one ([`Message::HEADER_LEN`]). Version 1 of the format (before the cost
//! model's byte), version 2 (states without their split-K factor and
//! ping-pong flag), version 3 (graphs without their layers' inputs,
//! every graph a chain) and version 4 (layers without their transposed-`B`
//! flag) are no longer read.
//!
//! A graph's body is its layers (each its name, operator and whether a
//! matmul reads its `B` transposed), then one list of inputs per layer
//! (earlier layers' indices as varints, at most
//! [`MAX_INPUTS`](crate::graph::MAX_INPUTS)): a chain's first layer has
//! none and each other layer the one before it.
//!
//! [`to_slice`] writes into a caller's buffer and returns the used part;
//! [`from_bytes`] reads one message and rejects a wrong version, a wrong
//! kind, coefficients of another cost model, malformed or truncated bodies
//! and trailing bytes, each with its own [`WireError`]. A message's largest
//! size is known at compile time ([`Message::MAX_ENCODED_LEN`]), so a fixed
//! buffer always suffices.

use crate::cost::{Coefficients, COEFFICIENTS_VERSION};
use crate::graph::Graph;
use crate::schedule::Schedule;
use crate::spec::HardwareSpec;
use core::fmt;
use postcard::experimental::max_size::MaxSize;
use serde::{de::DeserializeOwned, Serialize};

/// Version of the wire format: 5 since a graph's layer says whether a
/// matmul reads its `B` transposed (4: a graph's layers name their inputs;
/// 3: a state carries its split-K factor and ping-pong flag; 2:
/// coefficients carry the cost model's version).
pub const WIRE_VERSION: u8 = 5;

/// Bytes of the header every message starts with (the format version and
/// the kind); coefficients have one more ([`Message::HEADER_LEN`]).
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
    /// The version of the cost model whose values these are, written after
    /// the kind byte and required on decoding: [`COEFFICIENTS_VERSION`] for
    /// [`Coefficients`], `None` (no such byte) for the other messages.
    const COST_MODEL_VERSION: Option<u8> = None;
    /// Bytes before the postcard body in this type's messages.
    const HEADER_LEN: usize = match Self::COST_MODEL_VERSION {
        Some(_) => HEADER_LEN + 1,
        None => HEADER_LEN,
    };
    /// Most bytes an encoding of this type takes, header included.
    const MAX_ENCODED_LEN: usize = Self::HEADER_LEN + Self::POSTCARD_MAX_SIZE;
}

impl<const L: usize> Message for Schedule<L> {
    const KIND: Kind = Kind::Schedule;
}
impl Message for Coefficients {
    const KIND: Kind = Kind::Coefficients;
    const COST_MODEL_VERSION: Option<u8> = Some(COEFFICIENTS_VERSION);
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
    /// Coefficients of another version of the cost model than this build's
    /// (their numbers would mean something else here).
    CostModelVersion {
        /// The cost model's version in the header.
        found: u8,
        /// The version this build reads ([`COEFFICIENTS_VERSION`]).
        expected: u8,
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
            WireError::CostModelVersion { found, expected } => {
                write!(f, "coefficients of cost model version {found}; this build reads version {expected}")
            }
            WireError::UnexpectedEnd => f.write_str("truncated: the message ends early"),
            WireError::Malformed => f.write_str("malformed message body"),
            WireError::TrailingBytes => f.write_str("trailing bytes after the message"),
        }
    }
}

/// Encodes `value` into `buf`; returns the written prefix of `buf`.
pub fn to_slice<'b, T: Message>(value: &T, buf: &'b mut [u8]) -> Result<&'b mut [u8], WireError> {
    if buf.len() < T::HEADER_LEN {
        return Err(WireError::BufferTooSmall);
    }
    let (head, body) = buf.split_at_mut(T::HEADER_LEN);
    match (head, T::COST_MODEL_VERSION) {
        ([v, k], None) => (*v, *k) = (WIRE_VERSION, T::KIND as u8),
        ([v, k, m], Some(model)) => (*v, *k, *m) = (WIRE_VERSION, T::KIND as u8, model),
        _ => return Err(WireError::BufferTooSmall),
    }
    let used = postcard::to_slice(value, body).map_err(|_| WireError::BufferTooSmall)?.len();
    buf.get_mut(..T::HEADER_LEN + used).ok_or(WireError::BufferTooSmall)
}

/// Decodes one `T` occupying all of `bytes`.
pub fn from_bytes<T: Message>(bytes: &[u8]) -> Result<T, WireError> {
    let [version, kind, rest @ ..] = bytes else {
        return Err(WireError::Truncated);
    };
    if *version != WIRE_VERSION {
        return Err(WireError::UnsupportedVersion { found: *version });
    }
    if *kind != T::KIND as u8 {
        return Err(WireError::WrongKind { found: *kind });
    }
    let body = match T::COST_MODEL_VERSION {
        None => rest,
        Some(expected) => {
            let [found, body @ ..] = rest else {
                return Err(WireError::UnexpectedEnd);
            };
            if *found != expected {
                return Err(WireError::CostModelVersion { found: *found, expected });
            }
            body
        }
    };
    let (value, rest) = postcard::take_from_bytes::<T>(body).map_err(|e| match e {
        postcard::Error::DeserializeUnexpectedEnd => WireError::UnexpectedEnd,
        _ => WireError::Malformed,
    })?;
    if !rest.is_empty() {
        return Err(WireError::TrailingBytes);
    }
    Ok(value)
}
