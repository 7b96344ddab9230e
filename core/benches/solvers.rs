//! Solver timings: the attention benchmark on stress_gpu (build, WFC,
//! exact DP, enumeration) at the firmware's capacities (8 layers, 64 states
//! a layer) and at the host's ([`hwwfc_core::HOST_MAX_LAYERS`] layers,
//! 64 x [`hwwfc_core::HOST_DOMAIN_WORDS`] states), and random chains of 6,
//! 16 and 64 layers with 16, 36 and 64 states each.
//!
//! `cargo bench -p hwwfc-core --bench solvers` (add `-- --quick` for a
//! short run).

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};
use hwwfc_core::propagate::Propagation;
use hwwfc_core::wfc::WfcConfig;
use hwwfc_core::{exact, exhaustive, models, presets, wfc, Coefficients, ScheduleProblem};
use std::time::Duration;

#[path = "../tests/support/mod.rs"]
mod support;

/// Enumerate only below this many combinations.
const EXHAUSTIVE_LIMIT: u64 = 100_000_000;

fn lookahead_off() -> WfcConfig {
    WfcConfig { lookahead: false, ..WfcConfig::default() }
}

fn attention(c: &mut Criterion) {
    let graph = models::builtin::<8>("attention", None).unwrap();
    let spec = presets::stress_gpu();
    let k = Coefficients::default();
    let p = ScheduleProblem::<8, 1>::build(&graph, &spec, &k).unwrap();
    let mut g = c.benchmark_group("attention");
    g.bench_function("build", |b| {
        b.iter(|| ScheduleProblem::<8, 1>::build(black_box(&graph), black_box(&spec), black_box(&k)).unwrap())
    });
    g.bench_function("wfc", |b| b.iter(|| wfc::solve::<_, 8, 1>(black_box(&p), &WfcConfig::default()).unwrap()));
    g.bench_function("wfc_no_lookahead", |b| {
        b.iter(|| wfc::solve::<_, 8, 1>(black_box(&p), &lookahead_off()).unwrap())
    });
    let neighbours = WfcConfig { propagation: Propagation::Neighbours, ..WfcConfig::default() };
    g.bench_function("wfc_neighbours", |b| b.iter(|| wfc::solve::<_, 8, 1>(black_box(&p), &neighbours).unwrap()));
    g.bench_function("exact", |b| b.iter(|| exact::solve::<_, 8, 1>(black_box(&p)).unwrap()));
    g.finish();

    let combinations = p.combinations();
    if combinations <= EXHAUSTIVE_LIMIT as u128 {
        let mut g = c.benchmark_group("attention_exhaustive");
        g.sampling_mode(SamplingMode::Flat).sample_size(10).warm_up_time(Duration::from_millis(1));
        g.measurement_time(Duration::from_secs(5));
        g.bench_function(format!("{combinations}_combinations"), |b| {
            b.iter(|| exhaustive::solve::<_, 8, 1>(black_box(&p), EXHAUSTIVE_LIMIT).unwrap())
        });
        g.finish();
    } else {
        println!("attention: {combinations} combinations, enumeration skipped");
    }
}

/// The attention benchmark at the host's capacities: the same problem in
/// larger tables (the capacities size every loop over the domains' words).
fn attention_host(c: &mut Criterion) {
    const L: usize = hwwfc_core::HOST_MAX_LAYERS;
    const W: usize = hwwfc_core::HOST_DOMAIN_WORDS;
    let graph = models::builtin::<L>("attention", None).unwrap();
    let spec = presets::stress_gpu();
    let k = Coefficients::default();
    let p = Box::new(ScheduleProblem::<L, W>::build(&graph, &spec, &k).unwrap());
    let mut g = c.benchmark_group("attention_host_capacity");
    g.bench_function("build", |b| {
        b.iter(|| ScheduleProblem::<L, W>::build(black_box(&graph), black_box(&spec), black_box(&k)).unwrap())
    });
    g.bench_function("wfc", |b| b.iter(|| wfc::solve::<_, L, W>(black_box(&*p), &WfcConfig::default()).unwrap()));
    g.bench_function("exact", |b| b.iter(|| exact::solve::<_, L, W>(black_box(&*p)).unwrap()));
    g.finish();
}

/// The first feasible chain of the given shape from a fixed seed.
fn chain(layers: usize, states: usize) -> support::DenseProblem {
    let strategy = support::dense_chains(layers, states);
    support::sample(&strategy, 2024, 32)
        .into_iter()
        .find(|p| exact::solve::<_, 64, 1>(p).is_ok())
        .expect("a feasible chain")
}

fn chains(c: &mut Criterion) {
    let mut g = c.benchmark_group("chains");
    for layers in [6, 16, 64] {
        for states in [16, 36, 64] {
            let p = chain(layers, states);
            let id = format!("{layers}x{states}");
            g.bench_with_input(BenchmarkId::new("wfc", &id), &p, |b, p| {
                b.iter(|| wfc::solve::<_, 64, 1>(black_box(p), &WfcConfig::default()).unwrap())
            });
            g.bench_with_input(BenchmarkId::new("wfc_no_lookahead", &id), &p, |b, p| {
                b.iter(|| wfc::solve::<_, 64, 1>(black_box(p), &lookahead_off()).unwrap())
            });
            g.bench_with_input(BenchmarkId::new("exact", &id), &p, |b, p| {
                b.iter(|| exact::solve::<_, 64, 1>(black_box(p)).unwrap())
            });
        }
    }
    g.finish();

    let p = chain(6, 16);
    let combinations = p.combinations();
    if combinations <= EXHAUSTIVE_LIMIT as u128 {
        let mut g = c.benchmark_group("chains_exhaustive");
        g.sampling_mode(SamplingMode::Flat).sample_size(10).warm_up_time(Duration::from_millis(1));
        g.measurement_time(Duration::from_secs(5));
        g.bench_function(format!("6x16_{combinations}_combinations"), |b| {
            b.iter(|| exhaustive::solve::<_, 64, 1>(black_box(&p), EXHAUSTIVE_LIMIT).unwrap())
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = attention, attention_host, chains
}
criterion_main!(benches);
