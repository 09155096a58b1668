// Package verifier holds vwr's second, independent verifier of the
// pre-queue draw: verify_draw.py, written in Python from docs/draw.md alone
// and run on py_ecc's BLS12-381. Its Go test runs it next to internal/draw
// on the known-answer vector, real quicknet rounds and local draws, and
// requires the two to agree on every value and every verdict.
package verifier
