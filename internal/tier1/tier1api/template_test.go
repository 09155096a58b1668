package tier1api_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vwr-go/vwr/internal/testenv"
)

// TestTemplateMatchesRoutes keeps template.yaml and Handlers.Routes in step:
// every route is declared once with its method, admin routes (and only they)
// carry AWS_IAM, and every CodeUri is a lambdas/<fn> directory. Full schema
// checks are `make validate`'s job (sam validate --lint, cfn-lint).
func TestTemplateMatchesRoutes(t *testing.T) {
	t.Parallel()
	root := testenv.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tpl := string(b)
	b1 := setup(t, setupOpts{})
	for _, r := range b1.h.Routes() {
		re := regexp.MustCompile(`(?m)^\s+Method: ` + r.Method + `\n\s+Path: ` + regexp.QuoteMeta(r.Path) + `\n((\s+Auth:\n\s+Authorizer: AWS_IAM\n)?)`)
		m := re.FindAllStringSubmatch(tpl, -1)
		if len(m) != 1 {
			t.Errorf("route %s declared %d times in template.yaml", r.RouteKey(), len(m))
			continue
		}
		admin := strings.HasPrefix(r.Path, "/vwr/admin/")
		if iam := m[0][1] != ""; iam != admin {
			t.Errorf("route %s: AWS_IAM %v, want %v", r.RouteKey(), iam, admin)
		}
	}
	if n := strings.Count(tpl, "Type: HttpApi\n"); n != len(b1.h.Routes()) {
		t.Errorf("template has %d HttpApi events, Routes() has %d", n, len(b1.h.Routes()))
	}
	for _, m := range regexp.MustCompile(`CodeUri: (\S+)`).FindAllStringSubmatch(tpl, -1) {
		if _, err := os.Stat(filepath.Join(root, m[1], "main.go")); err != nil {
			t.Errorf("CodeUri %s has no main.go", m[1])
		}
	}
	for _, want := range []string{
		"Runtime: provided.al2023", "Architectures: [arm64]", "Handler: bootstrap",
		"Schedule: rate(1 minute)", "AttributeName: ttl", "BillingMode: PAY_PER_REQUEST",
		"Tier1TokenKeys:\n    Type: String\n    NoEcho: true",
	} {
		if !strings.Contains(tpl, want) {
			t.Errorf("template.yaml lacks %q", want)
		}
	}
	if strings.Contains(tpl, "FullAccess") {
		t.Error("template.yaml grants a *FullAccess policy")
	}
}
