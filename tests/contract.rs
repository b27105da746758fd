//! Contract tests live here (filled in by the wire contract work).
