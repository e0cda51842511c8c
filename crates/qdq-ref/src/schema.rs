//! Operator versions: which types and attributes each opset of each operator accepts.
//!
//! An opset import `v` selects the newest operator version `<= v` (ai.onnx QuantizeLinear
//! and DequantizeLinear have versions 10, 13, 19, 21, 23, 24, 25 and 28;
//! DynamicQuantizeLinear only 11; `com.microsoft` has version 1 of Q and DQ). Opsets newer
//! than 28 are rejected rather than guessed at.

use crate::dtype::DataType::{self, *};
use crate::error::{bail, Result};
use crate::layout::Allowed;

/// Operator domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Domain {
    /// `ai.onnx` (the empty domain string).
    Onnx,
    /// `com.microsoft` contrib operators.
    Microsoft,
}

impl Domain {
    /// Parses a NodeProto / OperatorSetIdProto domain string.
    ///
    /// ```
    /// use qdq_ref::Domain;
    /// assert_eq!(Domain::parse(""), Some(Domain::Onnx));
    /// assert_eq!(Domain::parse("ai.onnx"), Some(Domain::Onnx));
    /// assert_eq!(Domain::parse("com.microsoft"), Some(Domain::Microsoft));
    /// assert_eq!(Domain::parse("com.example"), None);
    /// ```
    pub fn parse(s: &str) -> Option<Domain> {
        match s {
            "" | "ai.onnx" => Some(Domain::Onnx),
            "com.microsoft" => Some(Domain::Microsoft),
            _ => None,
        }
    }

    /// The domain string.
    ///
    /// ```
    /// use qdq_ref::Domain;
    /// assert_eq!(Domain::Onnx.as_str(), "ai.onnx");
    /// assert_eq!(Domain::Microsoft.as_str(), "com.microsoft");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Domain::Onnx => "ai.onnx",
            Domain::Microsoft => "com.microsoft",
        }
    }
}

/// An operator-set import: the domain and the imported version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Opset {
    /// Domain of the operator.
    pub domain: Domain,
    /// Imported opset version of that domain.
    pub version: i64,
}

impl Opset {
    /// `ai.onnx` at `version`.
    ///
    /// ```
    /// use qdq_ref::{Domain, Opset};
    /// let o = Opset::onnx(21);
    /// assert_eq!((o.domain, o.version), (Domain::Onnx, 21));
    /// ```
    pub const fn onnx(version: i64) -> Opset {
        Opset { domain: Domain::Onnx, version }
    }

    /// `com.microsoft` version 1.
    ///
    /// ```
    /// use qdq_ref::{Domain, Opset};
    /// assert_eq!(Opset::microsoft(), Opset { domain: Domain::Microsoft, version: 1 });
    /// ```
    pub const fn microsoft() -> Opset {
        Opset { domain: Domain::Microsoft, version: 1 }
    }
}

/// How the scale type is constrained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScaleRule {
    /// The scale must have x's type (Q v19, v21, com.microsoft).
    SameAsX,
    /// Any type in the list.
    OneOf(&'static [DataType]),
}

/// The display name of a [`Schema`] (see [`Schema::name`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SchemaName(Schema);

impl std::fmt::Display for SchemaName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.domain {
            Domain::Onnx => write!(f, "{}-{}", self.0.op, self.0.since),
            Domain::Microsoft => write!(f, "com.microsoft.{}-{}", self.0.op, self.0.since),
        }
    }
}

/// One operator version's constraints.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Schema {
    pub op: &'static str,
    pub domain: Domain,
    pub since: i64,
    pub x: &'static [DataType],
    pub scale: ScaleRule,
    /// Q: output / zero-point types. DQ: x / zero-point types are `x`; this is the output list.
    pub y: &'static [DataType],
    pub attributes: &'static [&'static str],
    pub allowed: Allowed,
}

impl Schema {
    /// `QuantizeLinear-21`, `com.microsoft.QuantizeLinear-1`: a value that formats as
    /// the name, so a successful call never builds a string (the tensor API allocates
    /// only its outputs).
    ///
    /// ```
    /// // Schema is internal; its name prefixes the tensor API's errors. Opset 22 selects version 21.
    /// use qdq_ref::{quantize_linear, DataType, Opset, QuantizeAttributes, TensorRef};
    /// let (shape, x, s) = ([2], [1.0f32, 2.0], 0.5f32);
    /// let attrs = QuantizeAttributes { output_dtype: Some(DataType::I2), ..Default::default() };
    /// let r = quantize_linear(Opset::onnx(22), TensorRef::new(&shape, &x)?, TensorRef::scalar(&s), None, &attrs);
    /// assert!(r.unwrap_err().message().starts_with("QuantizeLinear-21: output_dtype INT2"));
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub(crate) fn name(&self) -> SchemaName {
        SchemaName(*self)
    }

    /// Fails with `UnknownAttribute` unless this version defines the attribute `name`.
    ///
    /// ```
    /// // Schema is internal; the tensor API checks every given attribute with it.
    /// use qdq_ref::{quantize_linear, ErrorKind, Opset, QuantizeAttributes, TensorRef};
    /// let (shape, x, s) = ([2], [1.0f32, 2.0], 0.5f32);
    /// let attrs = QuantizeAttributes { block_size: Some(2), ..Default::default() };
    /// let (xt, st) = (TensorRef::new(&shape, &x)?, TensorRef::scalar(&s));
    /// let e = quantize_linear(Opset::onnx(19), xt, st, None, &attrs).unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::UnknownAttribute);
    /// assert_eq!(e.message(), "QuantizeLinear-19 has no attribute 'block_size' (it has: axis, saturate)");
    /// # Ok::<(), qdq_ref::Error>(())
    /// ```
    pub(crate) fn check_attribute(&self, name: &str) -> Result<()> {
        if !self.attributes.contains(&name) {
            bail!(
                UnknownAttribute,
                "{} has no attribute '{name}' (it has: {})",
                self.name(),
                if self.attributes.is_empty() { "none".to_string() } else { self.attributes.join(", ") }
            );
        }
        Ok(())
    }
}

const TENSOR: Allowed = Allowed { per_axis: false, blocked: false };
const AXIS: Allowed = Allowed { per_axis: true, blocked: false };
const BLOCKED: Allowed = Allowed { per_axis: true, blocked: true };

const Q_X_10: &[DataType] = &[F32, I32];
const Q_X_19: &[DataType] = &[F32, F16, Bf16, I32];
const Q_Y_10: &[DataType] = &[U8, I8];
const Q_Y_19: &[DataType] = &[U8, I8, E4M3Fn, E4M3FnUz, E5M2, E5M2FnUz];
const Q_Y_21: &[DataType] = &[U8, I8, U16, I16, U4, I4, E4M3Fn, E4M3FnUz, E5M2, E5M2FnUz];
const Q_Y_23: &[DataType] = &[U8, I8, U16, I16, U4, I4, E4M3Fn, E4M3FnUz, E5M2, E5M2FnUz, E2M1];
const Q_Y_25: &[DataType] = &[U8, I8, U16, I16, U4, I4, U2, I2, E4M3Fn, E4M3FnUz, E5M2, E5M2FnUz, E2M1];
const Q_Y_28: &[DataType] = &[U8, I8, U16, I16, U4, I4, U2, I2, E4M3Fn, E4M3FnUz, E5M2, E5M2FnUz, E2M1, E2M3, E3M2];
const Q_S_23: &[DataType] = &[F32, F16, Bf16, I32];
const Q_S_24: &[DataType] = &[F32, F16, Bf16, I32, E8M0];
const Q_ATTR_19: &[&str] = &["axis", "saturate"];
const Q_ATTR_21: &[&str] = &["axis", "saturate", "block_size", "output_dtype"];
const Q_ATTR_23: &[&str] = &["axis", "saturate", "block_size", "output_dtype", "precision"];

const fn q(
    since: i64,
    x: &'static [DataType],
    scale: ScaleRule,
    y: &'static [DataType],
    attributes: &'static [&'static str],
    allowed: Allowed,
) -> Schema {
    Schema { op: "QuantizeLinear", domain: Domain::Onnx, since, x, scale, y, attributes, allowed }
}

const QUANTIZE: &[Schema] = &[
    q(10, Q_X_10, ScaleRule::OneOf(&[F32]), Q_Y_10, &[], TENSOR),
    q(13, Q_X_10, ScaleRule::OneOf(&[F32]), Q_Y_10, &["axis"], AXIS),
    q(19, Q_X_19, ScaleRule::SameAsX, Q_Y_19, Q_ATTR_19, AXIS),
    q(21, Q_X_19, ScaleRule::SameAsX, Q_Y_21, Q_ATTR_21, BLOCKED),
    q(23, Q_X_19, ScaleRule::OneOf(Q_S_23), Q_Y_23, Q_ATTR_23, BLOCKED),
    q(24, Q_X_19, ScaleRule::OneOf(Q_S_24), Q_Y_23, Q_ATTR_23, BLOCKED),
    q(25, Q_X_19, ScaleRule::OneOf(Q_S_24), Q_Y_25, Q_ATTR_23, BLOCKED),
    q(28, Q_X_19, ScaleRule::OneOf(Q_S_24), Q_Y_28, Q_ATTR_23, BLOCKED),
];

const MS_QUANTIZE: Schema = Schema {
    op: "QuantizeLinear",
    domain: Domain::Microsoft,
    since: 1,
    x: &[F32, F16],
    scale: ScaleRule::SameAsX,
    y: &[U8, I8, U16, I16, U4, I4],
    attributes: &["axis"],
    allowed: AXIS,
};

const DQ_X_10: &[DataType] = &[U8, I8, I32];
const DQ_X_19: &[DataType] = &[U8, I8, I32, E4M3Fn, E4M3FnUz, E5M2, E5M2FnUz];
const DQ_X_21: &[DataType] = &[U8, I8, U16, I16, I32, U4, I4, E4M3Fn, E4M3FnUz, E5M2, E5M2FnUz];
const DQ_X_23: &[DataType] = &[U8, I8, U16, I16, I32, U4, I4, E4M3Fn, E4M3FnUz, E5M2, E5M2FnUz, E2M1];
const DQ_X_25: &[DataType] = &[U8, I8, U16, I16, I32, U4, I4, U2, I2, E4M3Fn, E4M3FnUz, E5M2, E5M2FnUz, E2M1];
const DQ_X_28: &[DataType] =
    &[U8, I8, U16, I16, I32, U4, I4, U2, I2, E4M3Fn, E4M3FnUz, E5M2, E5M2FnUz, E2M1, E2M3, E3M2];
const WIDE: &[DataType] = &[F32, F16, Bf16];
const DQ_S_24: &[DataType] = &[F32, F16, Bf16, E8M0];
const DQ_ATTR_21: &[&str] = &["axis", "block_size"];
const DQ_ATTR_23: &[&str] = &["axis", "block_size", "output_dtype"];

const fn dq(
    since: i64,
    x: &'static [DataType],
    scale: &'static [DataType],
    attributes: &'static [&'static str],
    allowed: Allowed,
) -> Schema {
    Schema {
        op: "DequantizeLinear",
        domain: Domain::Onnx,
        since,
        x,
        scale: ScaleRule::OneOf(scale),
        y: WIDE,
        attributes,
        allowed,
    }
}

const DEQUANTIZE: &[Schema] = &[
    dq(10, DQ_X_10, &[F32], &[], TENSOR),
    dq(13, DQ_X_10, &[F32], &["axis"], AXIS),
    dq(19, DQ_X_19, WIDE, &["axis"], AXIS),
    dq(21, DQ_X_21, WIDE, DQ_ATTR_21, BLOCKED),
    dq(23, DQ_X_23, WIDE, DQ_ATTR_23, BLOCKED),
    dq(24, DQ_X_23, DQ_S_24, DQ_ATTR_23, BLOCKED),
    dq(25, DQ_X_25, DQ_S_24, DQ_ATTR_23, BLOCKED),
    dq(28, DQ_X_28, DQ_S_24, DQ_ATTR_23, BLOCKED),
];

const MS_DEQUANTIZE: Schema = Schema {
    op: "DequantizeLinear",
    domain: Domain::Microsoft,
    since: 1,
    x: &[U8, I8, U16, I16, I32, U4, I4],
    scale: ScaleRule::OneOf(&[F32, F16]),
    y: &[F32, F16],
    attributes: &["axis"],
    allowed: AXIS,
};

/// The newest ai.onnx opset this crate knows.
pub const LATEST_ONNX_OPSET: i64 = 28;

fn pick(op: &str, table: &'static [Schema], ms: &'static Schema, opset: Opset) -> Result<&'static Schema> {
    match opset.domain {
        Domain::Microsoft => {
            if opset.version < 1 {
                bail!(
                    UnsupportedOpset,
                    "com.microsoft.{op}: opset {} is not supported (version 1 exists)",
                    opset.version
                );
            }
            Ok(ms)
        }
        Domain::Onnx => {
            if opset.version > LATEST_ONNX_OPSET {
                bail!(
                    UnsupportedOpset,
                    "{op}: ai.onnx opset {} is newer than the newest known ({LATEST_ONNX_OPSET})",
                    opset.version
                );
            }
            match table.iter().rev().find(|s| s.since <= opset.version) {
                Some(s) => Ok(s),
                None => bail!(
                    UnsupportedOpset,
                    "{op}: ai.onnx opset {} predates the operator (first version {})",
                    opset.version,
                    table[0].since
                ),
            }
        }
    }
}

pub(crate) fn quantize(opset: Opset) -> Result<&'static Schema> {
    pick("QuantizeLinear", QUANTIZE, &MS_QUANTIZE, opset)
}

pub(crate) fn dequantize(opset: Opset) -> Result<&'static Schema> {
    pick("DequantizeLinear", DEQUANTIZE, &MS_DEQUANTIZE, opset)
}

pub(crate) fn check_dynamic(opset: Opset) -> Result<()> {
    if opset.domain != Domain::Onnx {
        bail!(UnsupportedOpset, "DynamicQuantizeLinear exists only in ai.onnx, not {}", opset.domain.as_str());
    }
    if !(11..=LATEST_ONNX_OPSET).contains(&opset.version) {
        bail!(
            UnsupportedOpset,
            "DynamicQuantizeLinear: ai.onnx opset {} is not supported (version 11 applies to opsets 11..={LATEST_ONNX_OPSET})",
            opset.version
        );
    }
    Ok(())
}
