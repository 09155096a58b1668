package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/tier1"
)

// `vwr verify-draw` recomputes a scheduled sale's draw from its published
// data alone (docs/draw.md): anyone can run it against any deployment.

func init() {
	register(&command{
		name:    "verify-draw",
		summary: "recompute a pre-queue draw from its published data; non-zero exit on any mismatch",
		run:     runVerifyDraw,
	})
}

func runVerifyDraw(ctx context.Context, inv invocation) int {
	fs := flag.NewFlagSet("vwr verify-draw", flag.ContinueOnError)
	fs.SetOutput(inv.Stderr)
	base := fs.String("url", "", "Tier 1 base URL to download from (vwr local: http://127.0.0.1:8080"+Tier1Prefix+")")
	file := fs.String("file", "", "verify a downloaded bundle instead (see -save)")
	event := fs.String("event", "", "event id (required)")
	chain := fs.String("chain-hash", "", "the beacon chain hash you trust, hex (default: the one the draw names, checked against its info)")
	save := fs.String("save", "", "with -url: also write the downloaded bundle to this file")
	timeout := fs.Duration("timeout", 2*time.Minute, "download timeout")
	if err := fs.Parse(inv.Args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	var want []byte
	if *chain != "" {
		var err error
		if want, err = hex.DecodeString(*chain); err != nil || len(want) != 32 {
			fmt.Fprintln(inv.Stderr, "vwr verify-draw: -chain-hash must be 64 hex digits")
			return exitUsage
		}
	}
	switch {
	case !tier1.ValidID(*event):
		fmt.Fprintln(inv.Stderr, "vwr verify-draw: -event is required and must match ^[A-Za-z0-9_-]{1,64}$")
		return exitUsage
	case (*base == "") == (*file == ""):
		fmt.Fprintln(inv.Stderr, "vwr verify-draw: give exactly one of -url and -file")
		return exitUsage
	}
	var b draw.Bundle
	if *file != "" {
		f, err := os.Open(*file)
		if err != nil {
			fmt.Fprintf(inv.Stderr, "vwr verify-draw: %v\n", err)
			return exitError
		}
		defer f.Close()
		if err := draw.DecodeBundle(f, &b); err != nil {
			fmt.Fprintf(inv.Stderr, "vwr verify-draw: FAIL: %v\n", err)
			return exitError
		}
	} else {
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		var err error
		if b, err = draw.Fetch(ctx, &http.Client{}, strings.TrimRight(*base, "/"), *event); err != nil {
			fmt.Fprintf(inv.Stderr, "vwr verify-draw: FAIL: %v\n", err)
			return exitError
		}
		if *save != "" {
			out, _ := json.Marshal(b)
			if err := os.WriteFile(*save, out, 0o644); err != nil {
				fmt.Fprintf(inv.Stderr, "vwr verify-draw: %v\n", err)
				return exitError
			}
		}
	}
	if err := draw.Verify(b, want, *event); err != nil {
		fmt.Fprintf(inv.Stderr, "vwr verify-draw: FAIL: %v\n", err)
		return exitError
	}
	d := b.Draw
	fmt.Fprintf(inv.Stdout, "OK %s: %d tickets drawn with %s round %d (chain %x, BLS signature verified)\n  Merkle root %x\n  R           %x\n  every position recomputed\n",
		d.EventID, *d.N, d.Chain.Metadata.BeaconID, d.Round, []byte(d.Chain.Hash), []byte(d.MerkleRoot), []byte(d.Root))
	return exitOK
}
