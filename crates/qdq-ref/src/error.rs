//! The error type shared by every entry point.
//!
//! Each error carries a machine-checkable [`ErrorKind`] and a message that names the
//! offending input or attribute, what it was and what was expected, so that a user can
//! act on it without reading this crate's source.

use core::fmt;

/// What went wrong, for programmatic matching. The message says where.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The operator version (opset) or domain is not one this crate implements.
    UnsupportedOpset,
    /// An attribute that this operator version does not define was given.
    UnknownAttribute,
    /// An attribute has a value outside its allowed set (e.g. `block_size < 0`,
    /// `saturate = 2`, `precision = INT8`, an `output_dtype` that is not a valid output).
    InvalidAttribute,
    /// A slice-level argument has a value outside its allowed set: a range that lies
    /// outside the tensor or does not start and end on a byte boundary of a packed output,
    /// a zero point outside its type's range, a block of 0, a `precision` that is not f32,
    /// f16 or bf16.
    InvalidArgument,
    /// A required attribute is missing (e.g. `output_dtype` with an e8m0 scale).
    MissingAttribute,
    /// An input's element type is not allowed for this operator version.
    UnsupportedType,
    /// Two types that must agree do not (zero point vs. x, `output_dtype` vs. zero point,
    /// x vs. scale where the version requires one type).
    TypeMismatch,
    /// `axis` is outside `[-rank, rank - 1]`.
    AxisOutOfRange,
    /// A scale or zero-point shape does not fit x's shape for the chosen granularity.
    ShapeMismatch,
    /// A data buffer's length does not match its shape and type.
    BufferLength,
    /// A shape's element count (or byte count) overflows `usize`, or a dimension is negative.
    ShapeOverflow,
    /// A float8 / float4 / float6 zero point holds a non-zero value.
    NonZeroZeroPoint,
    /// The wrong number of inputs or outputs for the operator.
    Arity,
    /// An instruction set was forced (per call, or by the `QDQ_ISA` environment variable of
    /// the `qdq` crate) that this CPU lacks, or whose name is unknown. The message lists
    /// the ISAs this CPU has.
    IsaUnavailable,
}

/// An error from any qdq entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// Builds an error.
    ///
    /// ```
    /// use qdq_ref::{Error, ErrorKind};
    /// let e = Error::new(ErrorKind::InvalidAttribute, "saturate must be 0 or 1, got 2");
    /// assert_eq!(e.kind(), ErrorKind::InvalidAttribute);
    /// assert_eq!(e.to_string(), "saturate must be 0 or 1, got 2");
    /// ```
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into() }
    }

    /// The category.
    ///
    /// ```
    /// use qdq_ref::{layout::normalize_axis, ErrorKind};
    /// let e = normalize_axis(5, 2).unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::AxisOutOfRange);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The human-readable explanation.
    ///
    /// ```
    /// use qdq_ref::{layout::element_count, Error, ErrorKind};
    /// assert_eq!(Error::new(ErrorKind::Arity, "needs 2 inputs").message(), "needs 2 inputs");
    /// let e = element_count("x_shape", &[usize::MAX, 2]).unwrap_err();
    /// assert!(e.message().starts_with("x_shape:"));
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Shorthand used throughout the crate.
pub type Result<T> = core::result::Result<T, Error>;

macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::error::Error::new($crate::error::ErrorKind::$kind, format!($($arg)*)))
    };
}
pub(crate) use bail;
