//! TODO(wire-contract): see CONTRACT.md.
