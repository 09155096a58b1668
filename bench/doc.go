// Package bench holds vwr's reproducible benchmarks (`make bench`,
// BENCHMARKS.md): Go benchmarks of the Tier 2 check path, the floor server
// (bench/floor) against bin/queue under one HTTP load generator, the same
// check script under redis-benchmark, Redis bytes per waiting user, Tier 1's
// partition capacity on moto, and a 10,000-visitor `vwr loadtest`. Results
// go to bench/results.json; BENCHMARKS.md is rendered from it (Render), and
// a test keeps the two in step. Nothing here is shipped.
package bench
