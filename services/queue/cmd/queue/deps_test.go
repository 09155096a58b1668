package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLinksNoLambdaOrTier1Code keeps the deployable queue lean and the house
// one-directional: it publishes the "admitted" message and reads event
// settings through internal/eventsettings (hence its adapters and the
// DynamoDB client), but links no Lambda code, no consumer and nothing of
// Tier 1: not its domain or stores, not the draw, not the BLS library.
func TestLinksNoLambdaOrTier1Code(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	// The list is the real one: the settings package is in it.
	if !slices.Contains(pkgs, "github.com/vwr-go/vwr/internal/eventsettings") {
		t.Fatalf("go list -deps lacks internal/eventsettings:\n%s", out)
	}
	for _, pkg := range pkgs {
		for _, banned := range []string{
			"github.com/aws/aws-lambda-go",
			"github.com/vwr-go/vwr/internal/tier1",
			"github.com/vwr-go/vwr/internal/draw",
			"github.com/cloudflare/circl",
			"github.com/vwr-go/vwr/internal/admitted/consumer",
			"github.com/awslabs/aws-lambda-go-api-proxy",
		} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") {
				t.Errorf("bin/queue links %s", pkg)
			}
		}
	}
}
