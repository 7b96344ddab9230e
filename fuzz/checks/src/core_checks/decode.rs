//! The wire format's decoding: every message type, with and without its
//! header, must decode to itself or say why not.

use super::pipeline::base_spec;
use super::{encode, Bytes};
use hwwfc_core::cost::{Coefficients, COEFFICIENTS_VERSION};
use hwwfc_core::dtype::DType;
use hwwfc_core::layer::Op;
use hwwfc_core::schedule::Schedule;
use hwwfc_core::space;
use hwwfc_core::spec::HardwareSpec;
use hwwfc_core::wire::{self, Message, WireError, WIRE_VERSION};
use hwwfc_core::{constraint, presets, Graph};
use std::fmt::Debug;

/// Decodes `data` as every message type of the wire format (and again with
/// each kind's header put in front, so that the fuzzer need not find it):
/// a value that decodes must take at most its `MAX_ENCODED_LEN`, encode into
/// that many bytes, decode from its encoding to the same encoding, and
/// refuse a buffer one byte short with `BufferTooSmall`; bytes that do not
/// decode must say why with the error their header calls for.
pub fn wire_decode(data: &[u8]) {
    decode_all(data);
    for kind in 1..=4u8 {
        let mut framed = Vec::with_capacity(data.len() + 2);
        framed.extend_from_slice(&[WIRE_VERSION, kind]);
        framed.extend_from_slice(data);
        decode_all(&framed);
    }
    // Coefficients behind their whole header, the cost model's byte too.
    let mut framed = Vec::with_capacity(data.len() + 3);
    framed.extend_from_slice(&[WIRE_VERSION, wire::Kind::Coefficients as u8, COEFFICIENTS_VERSION]);
    framed.extend_from_slice(data);
    decode_all(&framed);
}

fn decode_all(bytes: &[u8]) {
    if let Some(s) = roundtrip::<HardwareSpec>(bytes) {
        // A decoded spec is validated before use; validation never panics.
        let _ = s.validate();
    }
    if let Some(g) = roundtrip::<Graph<64>>(bytes) {
        let _ = g.validate();
        for layer in g.layers() {
            // Shapes are not checked yet: their figures must not overflow.
            let _ = (layer.op.validate(), layer.op.output_bytes(), layer.op.flops());
            let _ = (hwwfc_core::cost::input_bytes(&layer.op), layer.op.output_dims());
        }
    }
    if let Some(g) = roundtrip::<Graph<8>>(bytes) {
        let _ = g.validate();
    }
    if let Some(k) = roundtrip::<Coefficients>(bytes) {
        let _ = k.validate();
    }
    if let Some(s) = roundtrip::<Schedule<64>>(bytes) {
        states_from_outside(&s);
    }
    roundtrip::<Schedule<8>>(bytes);
}

/// The constraints and the cost model on the states of a decoded schedule,
/// which need not come from any candidate table (a runtime may hand them
/// back, and records on the host carry such states): no overflow, no panic.
fn states_from_outside(s: &Schedule<64>) {
    let ops = [
        Op::MatMul { m: 4096, n: 4096, k: 4096, batch: 1, dtype: DType::F16 },
        Op::MatMul { m: 77, n: 197, k: 96, batch: 12, dtype: DType::Bf16 },
        Op::Softmax { rows: 3, cols: 77, dtype: DType::F32 },
    ];
    let specs = [presets::stress_gpu(), presets::toy_gpu(), base_spec(&mut Bytes::new(&[2]))];
    let k = Coefficients::default();
    for (i, c) in s.choices.iter().enumerate() {
        let prev = s.choices.get(i.wrapping_sub(1)).map_or(c.state, |p| p.state);
        for spec in &specs {
            for op in &ops {
                let _ = constraint::check(spec, op, &c.state);
                let _ = hwwfc_core::resource::usage(op, &c.state);
                let _ = hwwfc_core::resource::row_bytes(op, &c.state);
                let _ = hwwfc_core::cost::occupancy(spec, op, &c.state);
                let _ = hwwfc_core::cost::grid(spec, op, &c.state);
                let _ = hwwfc_core::cost::unary_cost(spec, &k, op, &c.state);
                let _ = hwwfc_core::cost::transition_cost(spec, &k, op.output_bytes(), (&prev, &c.state), true);
                let _ = (space::applicable(op, &c.state), space::index_of(spec.space, op.kind(), &c.state));
            }
        }
        let _ = constraint::compatible(&prev, &c.state);
    }
}

fn roundtrip<T: Message + Debug>(bytes: &[u8]) -> Option<T> {
    match wire::from_bytes::<T>(bytes) {
        Ok(value) => {
            assert!(bytes.len() <= T::MAX_ENCODED_LEN, "{} bytes decode, above MAX_ENCODED_LEN", bytes.len());
            let first = encode(&value).expect("a decoded value encodes within MAX_ENCODED_LEN");
            let again: T = wire::from_bytes(&first).expect("an encoding decodes");
            assert_eq!(encode(&again), Ok(first.clone()), "encoding is not stable: {value:?}");
            let mut short = vec![0u8; first.len() - 1];
            assert_eq!(wire::to_slice(&value, &mut short).map(|b| b.len()), Err(WireError::BufferTooSmall));
            Some(value)
        }
        Err(e) => {
            let expected = match (bytes, T::COST_MODEL_VERSION) {
                ([] | [_], _) => Some(WireError::Truncated),
                ([v, ..], _) if *v != WIRE_VERSION => Some(WireError::UnsupportedVersion { found: *v }),
                ([_, k, ..], _) if *k != T::KIND as u8 => Some(WireError::WrongKind { found: *k }),
                ([_, _, m, ..], Some(expected)) if *m != expected => {
                    Some(WireError::CostModelVersion { found: *m, expected })
                }
                _ => None,
            };
            match expected {
                Some(x) => assert_eq!(e, x, "{bytes:?}"),
                None => assert!(
                    matches!(e, WireError::UnexpectedEnd | WireError::Malformed | WireError::TrailingBytes),
                    "{e:?} for a body"
                ),
            }
            None
        }
    }
}
