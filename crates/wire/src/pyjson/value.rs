//! The values of Python's `json` object model: what `json.loads` returns, each scalar kept as
//! the text `json.dumps` writes for it.

use indexmap::IndexMap;

/// A dict of Python's `json` model: keys are their `json.dumps` text without the quotes.
pub type PyDict = IndexMap<String, PyValue>;

/// One value of Python's `json` object model, scalars kept as `json.dumps` writes them.
#[derive(Debug, Clone, PartialEq)]
pub enum PyValue {
    /// `None`.
    Null,
    /// `True` / `False`.
    Bool(bool),
    /// An `int` or a `float`, as `json.dumps` writes it (`12`, `1e+16`, `NaN`, `-Infinity`).
    Number(String),
    /// A `str`, as `json.dumps` writes it without the quotes (`a\"b`, `\u00e9`, `\ud800`).
    Str(String),
    /// A `list`.
    List(Vec<PyValue>),
    /// A `dict`.
    Dict(PyDict),
}
