package main

import (
	"bytes"
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
// data alone (docs/draw.md): anyone can run it against any deployment. It
// trusts drand's public quicknet chain unless told otherwise, and checks
// visitors' receipts against the draw.

func init() {
	register(&command{
		name:    "verify-draw",
		summary: "recompute a pre-queue draw from its published data, with receipts; non-zero exit on any mismatch",
		run:     runVerifyDraw,
	})
}

// receiptFiles collects repeated -receipt flags.
type receiptFiles []string

func (r *receiptFiles) String() string     { return strings.Join(*r, ",") }
func (r *receiptFiles) Set(v string) error { *r = append(*r, v); return nil }

func runVerifyDraw(ctx context.Context, inv invocation) int {
	fs := flag.NewFlagSet("vwr verify-draw", flag.ContinueOnError)
	fs.SetOutput(inv.Stderr)
	base := fs.String("url", "", "Tier 1 base URL to download from (vwr local: http://127.0.0.1:8080"+Tier1Prefix+")")
	file := fs.String("file", "", "verify a downloaded bundle instead (see -save)")
	event := fs.String("event", "", "event id (required)")
	quicknet := hex.EncodeToString(draw.Quicknet().Hash)
	chain := fs.String("chain-hash", "", "the beacon chain hash you trust, hex (default: drand's public quicknet chain, "+quicknet+")")
	save := fs.String("save", "", "with -url: also write the downloaded bundle to this file")
	var receipts receiptFiles
	fs.Var(&receipts, "receipt", "a visitor's receipt (the page's \"Download receipt\") to check against the draw; repeatable")
	timeout := fs.Duration("timeout", 2*time.Minute, "download timeout")
	if err := fs.Parse(inv.Args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	want := draw.Quicknet().Hash
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
	fail := func(format string, a ...any) int {
		fmt.Fprintf(inv.Stderr, "vwr verify-draw: FAIL: "+format+"\n", a...)
		return exitError
	}
	var rcs []draw.Receipt
	for _, name := range receipts {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(inv.Stderr, "vwr verify-draw: %v\n", err)
			return exitError
		}
		rc, err := draw.DecodeReceipt(f)
		f.Close()
		if err != nil {
			return fail("%s: %v", name, err)
		}
		rcs = append(rcs, rc)
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
			return fail("%v", err)
		}
	} else {
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		var err error
		if b, err = draw.Fetch(ctx, &http.Client{}, strings.TrimRight(*base, "/"), *event); err != nil {
			return fail("%v", err)
		}
		if *save != "" {
			out, _ := json.Marshal(b)
			if err := os.WriteFile(*save, out, 0o644); err != nil {
				fmt.Fprintf(inv.Stderr, "vwr verify-draw: %v\n", err)
				return exitError
			}
		}
	}
	d := b.Draw
	if !bytes.Equal(d.Chain.Hash, want) {
		if *chain == "" {
			return fail("the draw names beacon chain %x (%q), not drand's public quicknet chain %s. "+
				"Only if you trust that chain, rerun with -chain-hash %x", []byte(d.Chain.Hash), d.Chain.Metadata.BeaconID, quicknet, []byte(d.Chain.Hash))
		}
		return fail("the draw names beacon chain %x, not the chain you trust (%x)", []byte(d.Chain.Hash), want)
	}
	if err := draw.Verify(b, want, *event); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(inv.Stdout, "OK %s: %d tickets drawn with %s round %d (chain %x, BLS signature verified)\n",
		d.EventID, *d.N, d.Chain.Metadata.BeaconID, d.Round, []byte(d.Chain.Hash))
	if hex.EncodeToString(want) != quicknet {
		fmt.Fprintf(inv.Stdout, "  WARNING: chain %x is NOT drand's public quicknet chain; it is trusted only because -chain-hash named it. Whoever holds its key knew every round in advance.\n", []byte(d.Chain.Hash))
	}
	fmt.Fprintf(inv.Stdout, "  closed      %s, %v before round %d at %s (margin %v)\n",
		d.ClosedAt.UTC().Format(time.RFC3339Nano), d.RoundAt.Sub(*d.ClosedAt), d.Round, d.RoundAt.Format(time.RFC3339), d.Margin())
	if d.RoundMoved != "" {
		fmt.Fprintf(inv.Stdout, "  round moved from the scheduled round %d (%s): the list closed too late for it\n", d.ScheduledRound, d.RoundMoved)
	}
	fmt.Fprintf(inv.Stdout, "  Merkle root %x\n  R           %x\n  every position recomputed\n", []byte(d.MerkleRoot), []byte(d.Root))
	code, proven := exitOK, 0
	for i, rc := range rcs {
		res, err := draw.CheckReceipt(b, rc)
		switch {
		case err != nil:
			fmt.Fprintf(inv.Stderr, "vwr verify-draw: FAIL: receipt %s: %v\n", receipts[i], err)
			code = exitError
		case res.ProvesClose:
			proven++
			fmt.Fprintf(inv.Stdout, "receipt %s: OK, ticket %x… at place %d; it saw R at %s, before the round: the list was fixed before its randomness existed\n",
				receipts[i], []byte(rc.H[:4]), res.Position, rc.RootSeenAt.UTC().Format(time.RFC3339Nano))
		default:
			fmt.Fprintf(inv.Stdout, "receipt %s: UNPROVEN CLOSE, ticket %x… at place %d; %s\n", receipts[i], []byte(rc.H[:4]), res.Position, res.Unproven)
		}
	}
	if len(rcs) > 0 && code == exitOK && proven == 0 {
		fmt.Fprintln(inv.Stdout, "No receipt proves that the list closed before the beacon round: the close rests on the operator's closedAt alone.")
	}
	return code
}
