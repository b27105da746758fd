//! Micro benchmarks (criterion), read back by `cargo xtask bench` from
//! `$CRITERION_HOME/<group>/<id>/new/sample.json`:
//!
//! - `stamp/golden_178B`, `stamp/config_64KiB`: `stamp_measured` under the default
//!   policy (cap 65536) on a config as the server holds it once read (`MeasuredConfig`,
//!   its `json.dumps` measure taken while the text was read), which it only reads
//!   (Agenta's Python likewise stamps a dict it keeps);
//! - `read_stamp/<input>`: text in, stamp out: `MeasuredConfig::from_json` of the input's
//!   compact JSON text (`inputs::config_text`) and `stamp_measured`, beside Agenta's
//!   `json.loads` + `stamp_effective_parameters` of the same text;
//! - `run_body/<input>`: config in, `/run` body bytes out: `stamp_measured` and
//!   `RunRequest::to_json_with_stamp` over `inputs::run_body_base`;
//! - `stamp_owned/<input>`: `stamp_effective_parameters`, which consumes its input: each
//!   call gets its own copy, made in criterion's untimed setup (`iter_batched`, batches
//!   of `owned_batch`); the stamped result is dropped inside the timed routine, as a
//!   caller would drop it;
//! - `stamp_parts/{walk,read_plain,read_measured}/<input>`: `stamp_borrowed` (the stamp
//!   that walks the whole config, for a config built in memory), serde_json's own reading
//!   of the text into a `Value`, and the measuring reading (`MeasuredConfig::from_json`);
//! - `stamp_parts/{clone,drop,measure,redact}/<input>`: where a stamp's time goes: one deep
//!   clone of the input `Value`, dropping one owned copy (made in untimed setup; a stamp
//!   consumes its input, so a dropped stamp frees it), `python_json_dumps_len` alone,
//!   `redact_effective_parameters` alone (on an owned copy made in untimed setup, its
//!   result dropped in the routine);
//! - `run_request/typed/<golden>`, `run_request/untyped/<golden>`: parse a `/run` golden
//!   and serialize it back, into `RunRequest` vs into `serde_json::Value`.

// Test code: a broken fixture or server should fail the test loudly, here and in helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// criterion_group! below defines `pub fn micro`, which cannot carry a doc comment.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};

use gatehouse_bench::inputs::{
    config_64k, config_text, golden_blob, read_fixture, run_body_base, RUN_REQUEST_GOLDENS,
};
use gatehouse_wire::effective::{
    stamp_borrowed, stamp_effective_parameters, stamp_measured, MeasuredConfig, StampPolicy,
};
use gatehouse_wire::pyjson::python_json_dumps_len;
use gatehouse_wire::redact::{redact_effective_parameters, Redaction};
use gatehouse_wire::run::RunRequest;

/// How many owned copies of `input` criterion prepares (untimed) before timing them.
///
/// Small enough that a batch stays in cache, as the one dict Agenta's Python stamps over
/// and over does: about 64 KiB of copies, at least one. (`BatchSize::SmallInput` makes a
/// batch a tenth of a sample: thousands of golden copies, megabytes that are cold by the
/// time they are stamped, so the per-call time grew with criterion's sample index, 2 to
/// 3x from the first sample to the last, and measured cache misses, not the stamp.)
fn owned_batch(input: &serde_json::Value) -> BatchSize {
    // The input's JSON size stands in for its heap size (several times larger).
    let copies = (64 * 1024 / python_json_dumps_len(input).max(1)).max(1);
    if copies == 1 {
        BatchSize::PerIteration
    } else {
        BatchSize::NumIterations(copies as u64)
    }
}

fn stamp(c: &mut Criterion) {
    let policy = StampPolicy::default();
    let golden = golden_blob().expect("the stamp vectors are readable");
    let big = config_64k();
    // The stamp of a config as the server holds it once read from text: the measure was
    // taken while reading, and the stamp borrows the config (nothing copied or freed), as
    // Agenta's Python stamps a dict it keeps.
    let texts = [
        ("golden_178B", config_text(&golden)),
        ("config_64KiB", config_text(&big)),
    ];
    let mut group = c.benchmark_group("stamp");
    for (name, text) in &texts {
        let config = MeasuredConfig::from_json(text).expect("a config");
        let view = stamp_measured(&config, &policy).expect("stamped");
        let walked = stamp_borrowed(config.object(), &policy).expect("stamped");
        assert_eq!(view.measured_bytes, walked.measured_bytes);
        group.throughput(Throughput::Bytes(view.measured_bytes as u64));
        group.bench_function(*name, |b| {
            b.iter(|| {
                stamp_measured(black_box(&config), black_box(&policy))
                    .map(|view| view.measured_bytes)
            })
        });
    }
    group.finish();

    // Text in, stamp out: reading the config and stamping it, beside Agenta's
    // `json.loads` + `stamp_effective_parameters` of the same text.
    let mut group = c.benchmark_group("read_stamp");
    for (name, text) in &texts {
        group.bench_function(*name, |b| {
            b.iter(|| {
                let config = MeasuredConfig::from_json(black_box(text)).expect("a config");
                stamp_measured(&config, black_box(&policy)).map(|view| view.measured_bytes)
            })
        });
    }
    group.finish();

    // Config in, `/run` body bytes out: the stamp and the request written around it,
    // beside Agenta's `stamp_effective_parameters` + `json.dumps` of its request.
    let base = run_body_base();
    let mut group = c.benchmark_group("run_body");
    for (name, text) in &texts {
        let config = MeasuredConfig::from_json(text).expect("a config");
        group.bench_function(*name, |b| {
            b.iter(|| {
                let view = stamp_measured(black_box(&config), &policy).expect("stamped");
                base.to_json_with_stamp(&view).expect("serializes").len()
            })
        });
    }
    group.finish();

    // The stamp that takes its input (kept for callers that own their config): the
    // free of the consumed config is in it.
    let mut group = c.benchmark_group("stamp_owned");
    for (name, input) in [("golden_178B", &golden), ("config_64KiB", &big)] {
        // Both are stamped: nothing is measured on a rejected input.
        let stamped = stamp_effective_parameters(input.clone(), &policy).expect("stamped");
        group.throughput(Throughput::Bytes(stamped.measured_bytes as u64));
        group.bench_function(name, |b| {
            b.iter_batched(
                || input.clone(),
                // The stamped object is dropped here, inside the timed routine.
                |owned| {
                    stamp_effective_parameters(owned, black_box(&policy))
                        .map(|stamped| stamped.measured_bytes)
                },
                owned_batch(input),
            )
        });
    }
    group.finish();
}

fn stamp_parts(c: &mut Criterion) {
    let golden = golden_blob().expect("the stamp vectors are readable");
    let big = config_64k();
    let mut group = c.benchmark_group("stamp_parts");
    let policy = StampPolicy::default();
    for (name, input) in [("golden_178B", &golden), ("config_64KiB", &big)] {
        let object = input.as_object().expect("an object").clone();
        let text = config_text(input);
        group.bench_with_input(BenchmarkId::new("walk", name), &object, |b, object| {
            b.iter(|| {
                stamp_borrowed(black_box(object), black_box(&policy))
                    .map(|view| view.measured_bytes)
            })
        });
        group.bench_with_input(BenchmarkId::new("read_plain", name), &text, |b, text| {
            b.iter(|| serde_json::from_str::<serde_json::Value>(black_box(text)).expect("JSON"))
        });
        group.bench_with_input(BenchmarkId::new("read_measured", name), &text, |b, text| {
            b.iter(|| MeasuredConfig::from_json(black_box(text)).expect("a config"))
        });
        group.bench_with_input(BenchmarkId::new("clone", name), input, |b, input| {
            b.iter(|| black_box(input).clone())
        });
        group.bench_with_input(BenchmarkId::new("drop", name), input, |b, input| {
            b.iter_batched(|| input.clone(), drop, owned_batch(input))
        });
        group.bench_with_input(BenchmarkId::new("measure", name), input, |b, input| {
            b.iter(|| python_json_dumps_len(black_box(input)))
        });
        group.bench_with_input(BenchmarkId::new("redact", name), &object, |b, object| {
            b.iter_batched(
                || object.clone(),
                |owned| redact_effective_parameters(owned, Redaction::Gatehouse).1,
                owned_batch(input),
            )
        });
    }
    group.finish();
}

fn run_request(c: &mut Criterion) {
    let mut group = c.benchmark_group("run_request");
    for name in RUN_REQUEST_GOLDENS {
        let bytes = read_fixture(&format!("run_request.{name}.json")).expect("golden readable");
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_with_input(BenchmarkId::new("typed", name), &bytes, |b, bytes| {
            b.iter(|| {
                let request: RunRequest =
                    serde_json::from_slice(black_box(bytes)).expect("golden parses typed");
                serde_json::to_vec(&request).expect("serializes")
            })
        });
        group.bench_with_input(BenchmarkId::new("untyped", name), &bytes, |b, bytes| {
            b.iter(|| {
                let value: serde_json::Value =
                    serde_json::from_slice(black_box(bytes)).expect("golden parses untyped");
                serde_json::to_vec(&value).expect("serializes")
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = micro;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(60);
    targets = stamp, stamp_parts, run_request
}
criterion_main!(micro);
