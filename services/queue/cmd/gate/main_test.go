package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBinaryFailsFastAndShipsInTheImage: the deployable gate builds, names
// every missing variable with exit code 2, and the Tier 2 image builds and
// copies it beside the queue.
func TestBinaryFailsFastAndShipsInTheImage(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "gate")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("gate without settings: %v\n%s", err, out)
	}
	for _, want := range []string{`"level":"ERROR"`, "GATE_UPSTREAM", "QUEUE_ENTRY_TOKEN_SECRET"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	df, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`go build [^\n]*-o /out/gate \./services/queue/cmd/gate\n`,
		`COPY --from=build /out/gate /gate\n`,
		`go build [^\n]*-o /out/queue \./services/queue/cmd/queue\n`,
		`ENTRYPOINT \["/queue"\]`,
	} {
		if !regexp.MustCompile(re).Match(df) {
			t.Errorf("services/queue/Dockerfile does not match %s", re)
		}
	}
}

// TestLinksNeitherRedisNorAWS: the gate checks tokens on its own; it must
// not pull in the queue's store or any cloud SDK.
func TestLinksNeitherRedisNorAWS(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/redis/", "github.com/aws/", "github.com/vwr-go/vwr/services/queue/redisstore", "github.com/vwr-go/vwr/internal/tier1"} {
			if strings.HasPrefix(pkg, banned) {
				t.Errorf("the gate links %s", pkg)
			}
		}
	}
}
